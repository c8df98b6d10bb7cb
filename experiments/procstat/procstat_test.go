package procstat

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// statLine writes a stat line as the kernel does, with every field after
// the name: state, ppid, pgrp, then zeros but the start time (field 22).
func statLine(pid, comm, state, pgrp, start string) string {
	f := make([]string, 50)
	for i := range f {
		f[i] = "0"
	}
	f[0], f[1], f[2], f[19] = state, "1", pgrp, start
	return pid + " (" + comm + ") " + strings.Join(f, " ")
}

// TestParse reads hand-made stat lines: a plain one, command names with
// spaces and parentheses (which hold what looks like fields), a zombie,
// and lines that are not stat lines.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Stat
		live bool
		// bad is a piece of the error a line that cannot be read gives.
		bad string
	}{
		{name: "a sleeping process", line: statLine("4242", "idemlab", "S", "4242", "987654"),
			want: Stat{PID: 4242, Comm: "idemlab", State: 'S', PGRP: 4242, Start: 987654}, live: true},
		{name: "a command with spaces", line: statLine("17", "python3 handler.py", "R", "15", "300"),
			want: Stat{PID: 17, Comm: "python3 handler.py", State: 'R', PGRP: 15, Start: 300}, live: true},
		{name: "a command with parentheses and fields", line: statLine("18", "a) Z 1 99 (b", "D", "15", "301"),
			want: Stat{PID: 18, Comm: "a) Z 1 99 (b", State: 'D', PGRP: 15, Start: 301}, live: true},
		{name: "an empty command", line: statLine("19", "", "S", "19", "1"),
			want: Stat{PID: 19, Comm: "", State: 'S', PGRP: 19, Start: 1}, live: true},
		{name: "a zombie", line: statLine("20", "sh", "Z", "15", "302"),
			want: Stat{PID: 20, Comm: "sh", State: 'Z', PGRP: 15, Start: 302}},
		{name: "a dead process", line: statLine("21", "sh", "X", "15", "303"),
			want: Stat{PID: 21, Comm: "sh", State: 'X', PGRP: 15, Start: 303}},
		{name: "no parentheses", line: "22 sh S 1 22", bad: "no command name"},
		{name: "a short line", line: "23 (sh) S 1 23 23", bad: "4 fields after the name"},
		{name: "a state of two letters", line: statLine("24", "sh", "SZ", "24", "1"), bad: "state"},
		{name: "a process group that is not a number", line: statLine("25", "sh", "S", "x", "1"), bad: "process group"},
		{name: "a start time that is not a number", line: statLine("26", "sh", "S", "26", "-1"), bad: "start time"},
		{name: "no pid", line: statLine("", "sh", "S", "26", "1"), bad: "pid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.line)
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("Parse = %+v, %v; want an error about %q", got, err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if got.Live() != tt.live {
				t.Errorf("Live = %v, want %v", got.Live(), tt.live)
			}
		})
	}
}

// TestReadSelf reads this process's own stat line: its pid, its group as
// the system call gives it, and a state that is alive.
func TestReadSelf(t *testing.T) {
	st, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PGRP != syscall.Getpgrp() || !st.Live() || st.Start == 0 {
		t.Errorf("Read(self) = %+v; want pid %d, group %d, alive, a start time", st, os.Getpid(), syscall.Getpgrp())
	}
	if _, err := Read(1 << 30); !os.IsNotExist(err) {
		t.Errorf("Read of no such pid: %v, want a not-exist error", err)
	}
}
