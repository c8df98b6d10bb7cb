package harness

import (
	"testing"
	"time"

	"idemlab/experiments/results"
)

// TestWindowIsOneTimeline: ended_at is started_at plus the elapsed time
// the duration says, to the microsecond, so verify's window check (which
// allows 2 ms) holds whatever the wall clock did meanwhile.
func TestWindowIsOneTimeline(t *testing.T) {
	start := time.Now()
	for _, elapsed := range []time.Duration{0, 999 * time.Nanosecond, 117*time.Millisecond + 912345*time.Nanosecond, 3 * time.Hour} {
		started, ended, ms := window(start, start.Add(elapsed))
		s, err1 := time.Parse(time.RFC3339Nano, started)
		e, err2 := time.Parse(time.RFC3339Nano, ended)
		if err1 != nil || err2 != nil {
			t.Fatalf("%v: %v, %v", elapsed, err1, err2)
		}
		if got, want := e.Sub(s), elapsed.Truncate(time.Microsecond); got != want {
			t.Errorf("%v: ended_at - started_at = %v, want %v", elapsed, got, want)
		}
		if want := float64(elapsed.Microseconds()) / 1000; ms != want {
			t.Errorf("%v: duration_ms %v, want %v", elapsed, ms, want)
		}
		p := results.Process{ProcessRecord: results.ProcessRecord{StartedAt: started, EndedAt: ended, DurationMS: ms}}
		if f := results.Windows(results.Records{Processes: []results.Process{p}}); len(f) > 0 {
			t.Errorf("%v: %v", elapsed, f)
		}
	}
}
