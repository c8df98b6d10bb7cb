// Package procstat reads a process's /proc/PID/stat: the one parser of
// that line for the harness (a worker's process group and whether it is
// still alive) and the backend (an owner's start time, a server process
// that is a zombie).
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is what idemlab reads of a process's stat line.
type Stat struct {
	PID int
	// Comm is the command name, field 2, without its parentheses.
	Comm string
	// State is field 3: R, S, D, Z (a zombie), X (dead), …
	State byte
	// PGRP is the process group, field 5.
	PGRP int
	// Start is the start time, field 22, in clock ticks since boot: with
	// the pid, it names one process even after the pid is reused.
	Start uint64
}

// Live reports whether the process still runs: not a zombie waiting to
// be reaped, and not dead.
func (s Stat) Live() bool { return s.State != 'Z' && s.State != 'X' }

// Parse reads one stat line: "pid (comm) state ppid pgrp … starttime …".
// The command name may hold spaces and parentheses, so the fields after
// it are counted from its last closing parenthesis.
func Parse(line string) (Stat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("stat line %q: no command name in parentheses", line)
	}
	var st Stat
	var err error
	if st.PID, err = strconv.Atoi(strings.TrimSpace(line[:open])); err != nil {
		return Stat{}, fmt.Errorf("stat line %q: pid: %w", line, err)
	}
	st.Comm = line[open+1 : end]
	// f[0] is field 3, so field n is f[n-3].
	f := strings.Fields(line[end+1:])
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("stat line %q: %d fields after the name, want at least 20", line, len(f))
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("stat line %q: state %q is not one letter", line, f[0])
	}
	st.State = f[0][0]
	if st.PGRP, err = strconv.Atoi(f[5-3]); err != nil {
		return Stat{}, fmt.Errorf("stat line %q: process group: %w", line, err)
	}
	if st.Start, err = strconv.ParseUint(f[22-3], 10, 64); err != nil {
		return Stat{}, fmt.Errorf("stat line %q: start time: %w", line, err)
	}
	return st, nil
}

// Read reads /proc/PID/stat. A process that is gone gives the error of
// the read, fs.ErrNotExist or ESRCH.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	st, err := Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}
