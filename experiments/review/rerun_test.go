package review

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// TestScheduled: a rerun reads which conditions the OS schedules from the
// record's scheduled flags from format 6 on, whatever the names say, and
// from the names alone, by the older formats' rule, in a folder of
// format 5 or older.
func TestScheduled(t *testing.T) {
	conds := func(scheduled ...string) []results.ConditionResult {
		var out []results.ConditionResult
		for _, n := range []string{"p/timing-kill", "p/crash-after-hits", "p/random", "p/concurrent", "p/points"} {
			out = append(out, results.ConditionResult{Name: n, Scheduled: slices.Contains(scheduled, n)})
		}
		return out
	}
	tests := []struct {
		name     string
		format   int
		scenario string
		conds    []results.ConditionResult
		want     []string
	}{
		{"format 6: the flags", 6, "explore", conds("p/timing-kill"), []string{"p/timing-kill"}},
		{"format 6: a flag the name does not suggest", 6, "explore", conds("p/points"), []string{"p/points"}},
		{"format 6: no flag, whatever the names", 6, "pattern", conds(), nil},
		{"format 5 explore: timing- names", 5, "explore", conds(), []string{"p/timing-kill"}},
		{"format 5 pattern: random and concurrent", 5, "pattern", conds(), []string{"p/random", "p/concurrent"}},
		{"format 4 redelivery: none", 4, "redelivery", conds(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scheduled(tt.format, results.ScenarioResult{Name: tt.scenario, Conditions: tt.conds})
			var names []string
			for _, c := range tt.conds {
				if got[c.Name] {
					names = append(names, c.Name)
				}
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("scheduled (-want +got):\n%s", diff)
			}
		})
	}
}
