package batch

import (
	"runtime"
	"time"
)

// spinWindow is how long before a deadline PreciseSleep stops sleeping
// and starts polling the clock. time.Sleep on Linux wakes 50-100 µs late
// on an idle machine and up to a millisecond late on a loaded 2-core one,
// which over the article's 27 steps adds up to several per cent, or tens
// of per cent, of the simulated-latency floor the timings are compared
// with. A 1 ms window absorbed that in trials on this project's machines
// (a 200 µs window left the journal at 2.0x the floor under load, 1 ms at
// 1.4x, spinning throughout no better).
const spinWindow = time.Millisecond

// PreciseSleep waits d with an error of a few microseconds: it sleeps
// until shortly before the deadline, then polls the monotonic clock,
// yielding the processor between polls. The simulated latencies are meant
// as exact costs, so an overshooting sleep would be measured as harness
// overhead that is not there.
func PreciseSleep(d time.Duration) {
	if d <= 0 {
		return
	}
	deadline := time.Now().Add(d)
	if d > spinWindow {
		time.Sleep(d - spinWindow)
	}
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
}
