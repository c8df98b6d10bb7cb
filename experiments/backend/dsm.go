package backend

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// dsmPrefix is where PostgreSQL keeps its dynamic shared memory segments
// (dynamic_shared_memory_type posix, the default on Linux): one file per
// segment, /dev/shm/PostgreSQL.HANDLE, the postmaster's control segment
// among them. A server shut down removes its own; one killed by SIGKILL,
// as a crash or a power cut kills it, leaves them in the machine's memory
// (each control segment about 27 KB), and a restarted server does not find
// the old ones.
const dsmPrefix = "/dev/shm/PostgreSQL."

// dsmOf lists the dynamic shared memory segments that processes pids map,
// read from /proc/PID/maps while they live: the segments a kill is about
// to orphan.
func dsmOf(pids []int) []string {
	seen := map[string]bool{}
	var out []string
	for _, pid := range pids {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			i := strings.Index(line, dsmPrefix)
			if i < 0 {
				continue
			}
			p := strings.TrimSuffix(line[i:], " (deleted)")
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		f.Close()
	}
	return out
}

// removeDSM removes segments, once the processes that mapped them are
// gone; one already removed is not an error.
func removeDSM(segments []string) error {
	var errs []error
	for _, p := range segments {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the killed server's shared memory %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
