package scenario_test

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/scenario"
)

// TestPlanCapsSlots: a plan that runs its trials side by side gets as
// many slots as --parallel, else its section's parallel, else the
// machine's, never more than its bound; one that does not gets none.
func TestPlanCapsSlots(t *testing.T) {
	machine := runtime.GOMAXPROCS(0)
	tests := []struct {
		name string
		caps scenario.PlanCaps
		flag int
		want int
	}{
		{"one after another", scenario.PlanCaps{}, 4, 0},
		{"one after another, bounded", scenario.PlanCaps{Bound: 1}, 4, 0},
		{"the machine's", scenario.PlanCaps{SideBySide: true}, 0, machine},
		{"the section's", scenario.PlanCaps{SideBySide: true, Parallel: 3}, 0, 3},
		{"the flag over the section", scenario.PlanCaps{SideBySide: true, Parallel: 3}, 7, 7},
		{"bound below the flag", scenario.PlanCaps{SideBySide: true, Bound: 1}, 7, 1},
		{"bound below the section", scenario.PlanCaps{SideBySide: true, Parallel: 3, Bound: 2}, 0, 2},
		{"bound above the flag", scenario.PlanCaps{SideBySide: true, Bound: 9}, 7, 7},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, tt.caps.Slots(tt.flag)); d != "" {
			t.Errorf("%s: Slots(%d) (-want +got):\n%s", tt.name, tt.flag, d)
		}
	}
}
