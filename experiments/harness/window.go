package harness

import "time"

// window renders a process's start, end and duration on one timeline:
// the start's wall clock, and the time elapsed on the monotonic clock.
// The end is the start plus that time rather than a second reading of the
// wall clock, so a step of the wall clock while the process ran (an NTP
// or hypervisor correction) cannot make ended_at disagree with
// duration_ms, which verify checks to the microsecond's rounding.
func window(start, end time.Time) (startedAt, endedAt string, durationMS float64) {
	elapsed := end.Sub(start).Truncate(time.Microsecond)
	s := start.Round(0).UTC()
	return s.Format(time.RFC3339Nano), s.Add(elapsed).Format(time.RFC3339Nano), float64(elapsed.Microseconds()) / 1000
}

// Window is window for a process the harness did not start through a
// Runner, such as a power-loss mount's server, so its line reads on the
// same timeline as every other.
func Window(start, end time.Time) (startedAt, endedAt string, durationMS float64) {
	return window(start, end)
}
