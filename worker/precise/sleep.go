// Package precise waits exact simulated latencies: the batch worker's
// local steps and the receiver's hold before it logs a send.
package precise

import (
	"runtime"
	"time"
)

// spinWindow is how long before a deadline Sleep stops sleeping
// and starts polling the clock. The sleep is a clock_nanosleep with the
// thread's timer slack at 1 ns, which on this project's 2-core machines
// woke 70–80 µs late at the median and 105–200 µs late at the 99th
// percentile; time.Sleep, which waits in the runtime's poller with
// millisecond timeouts, woke 260–760 µs late, so it needed a 1 ms window
// of spinning for every simulated step. The shorter spin leaves the cores
// free for the parent and for a second lane of workers.
const spinWindow = 300 * time.Microsecond

// Sleep waits d with an error of a few microseconds: it sleeps
// until shortly before the deadline, then polls the monotonic clock,
// yielding the processor between polls. The simulated latencies are meant
// as exact costs, so an overshooting sleep would be measured as harness
// overhead that is not there.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	deadline := time.Now().Add(d)
	if d > spinWindow {
		nanosleep(d - spinWindow)
	}
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
}
