package precise

import (
	"time"

	"golang.org/x/sys/unix"
)

// nanosleep blocks the calling thread for d. Timer slack is a property of
// the thread, and a goroutine may run on any thread, so it is set on each
// call; it costs one system call, well under a microsecond. Where either
// call fails, the spin after it absorbs the error.
func nanosleep(d time.Duration) {
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	ts := unix.NsecToTimespec(int64(d))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
	}
}
