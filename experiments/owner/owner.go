// Package owner names the process that made something a run leaves
// behind if it is SIGKILLed (a throwaway cluster, a database, a scratch
// folder), by its pid and start time, so the next run removes what
// belongs to an owner that is gone, by identity and never by age.
package owner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"idemlab/experiments/procstat"
)

// Owner identifies the process that made a cluster, a database or a
// scratch folder: its pid
// and the start time the kernel gives it (/proc/PID/stat field 22, in
// clock ticks since boot), so that a pid reused by another process is not
// taken for the owner, and the boot and host it ran on.
type Owner struct {
	PID   int
	Start uint64
	Boot  string
	Host  string
}

// Self is this process as an owner.
func Self() (Owner, error) {
	o := Owner{PID: os.Getpid()}
	var err error
	if o.Start, err = startTime(o.PID); err != nil {
		return Owner{}, err
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return Owner{}, fmt.Errorf("read the boot id: %w", err)
	}
	o.Boot = strings.TrimSpace(string(b))
	if o.Host, err = os.Hostname(); err != nil {
		return Owner{}, fmt.Errorf("read the host name: %w", err)
	}
	return o, nil
}

// startTime reads field 22 of /proc/PID/stat, the process's start time.
func startTime(pid int) (uint64, error) {
	st, err := procstat.Read(pid)
	return st.Start, err
}

func (o Owner) String() string {
	return fmt.Sprintf("pid=%d start=%d boot=%s host=%s", o.PID, o.Start, o.Boot, o.Host)
}

// Parse reads what String wrote.
func Parse(s string) (Owner, error) {
	var o Owner
	seen := map[string]bool{}
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "pid":
			o.PID, err = strconv.Atoi(v)
		case "start":
			o.Start, err = strconv.ParseUint(v, 10, 64)
		case "boot":
			o.Boot = v
		case "host":
			o.Host = v
		default:
			err = fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return Owner{}, fmt.Errorf("owner record %q: %w", s, err)
		}
		seen[k] = true
	}
	if len(seen) != 4 || o.PID <= 0 {
		return Owner{}, fmt.Errorf("owner record %q: want pid, start, boot and host", s)
	}
	return o, nil
}

// Gone says whether the owner has certainly ended: it ran on this host,
// and either in an earlier boot, or no process has its pid now, or the
// process with its pid started at another time, or is a zombie. An owner on another host
// is never gone, for this host cannot tell.
func (o Owner) Gone(self Owner) bool {
	if o.Host != self.Host {
		return false
	}
	if o.Boot != self.Boot {
		return true
	}
	st, err := procstat.Read(o.PID)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true
	}
	// A killed owner whose parent has not reaped it yet is a zombie: it
	// has ended, though its pid and start time are still there.
	return err == nil && (st.Start != o.Start || !st.Live())
}
