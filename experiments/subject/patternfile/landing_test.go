package patternfile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// TestLanding places kills among hand-made point arrivals: a kill at or
// after a point's arrival comes after that point; a kill timed from the
// first point adds its arrival; a delivery the harness did not kill, or
// one killed at a point or on its timeout, was not killed by the delay; a
// delivery without recorded arrivals (format 4 or older) cannot be
// placed.
func TestLanding(t *testing.T) {
	killed := results.ProcessRecord{KilledBy: "harness", Signal: "killed", ExitCode: -1}
	arrivals := []int64{30_000, 31_000, 35_000}
	names := []string{"ready", "after-insert", "after-commit"}
	tests := []struct {
		name      string
		killUS    int64
		d         Delivery
		p         results.ProcessRecord
		fromFirst bool
		total     int
		want      string
		ok        bool
	}{
		{"from the start, in start-up", 20_000, Delivery{Points: []string{}, PointsUS: []int64{}}, killed, false, 3, LandedBeforeFirst, true},
		{"from the start, between", 32_000, Delivery{Points: names[:2], PointsUS: arrivals[:2]}, killed, false, 3, "between points 2 and 3", true},
		{"from the first point, right after it", 1, Delivery{Points: names[:1], PointsUS: arrivals[:1]}, killed, true, 3, "between points 1 and 2", true},
		{"from the first point, at a later arrival", 1_000, Delivery{Points: names[:2], PointsUS: arrivals[:2]}, killed, true, 3, "between points 2 and 3", true},
		{"after the last", 5_001, Delivery{Points: names, PointsUS: arrivals}, killed, true, 3, LandedAfterLast, true},
		{"no points at all", 900, Delivery{Points: []string{}}, killed, false, 0, LandedNoPoints, true},
		{"the program ended first", 90_000, Delivery{Points: names, PointsUS: arrivals}, results.ProcessRecord{}, true, 3, LandedNotKilled, true},
		{"killed at a point, not by the delay", 1, Delivery{Points: names[:1], PointsUS: arrivals[:1], KilledAt: "ready"}, killed, true, 3, LandedNotKilled, true},
		{"no arrivals recorded", 1, Delivery{Points: names[:2]}, killed, true, 3, "", false},
		{"killed from the first point that never came", 1, Delivery{Points: []string{}}, killed, true, 3, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Landing(Observation{Kind: KindKill, KillUS: tt.killUS}, tt.d, tt.p, tt.fromFirst, tt.total)
			if diff := cmp.Diff([]any{tt.want, tt.ok}, []any{got, ok}); diff != "" {
				t.Errorf("landing (-want +got):\n%s", diff)
			}
		})
	}
}
