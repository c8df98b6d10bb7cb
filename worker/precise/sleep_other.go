//go:build !linux

package precise

import "time"

// nanosleep falls back to the runtime's sleep where clock_nanosleep and
// timer slack are not at hand; the spin after it absorbs less of its
// lateness, so timings there sit further above the floor.
func nanosleep(d time.Duration) { time.Sleep(d) }
