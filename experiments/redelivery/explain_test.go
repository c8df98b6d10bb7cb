package redelivery

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// TestExplain names differences by delivery, follow-up jobs first.
func TestExplain(t *testing.T) {
	c := results.ConditionResult{Differences: []results.Difference{
		{Path: "[0].exit_code", Expected: "17", Observed: "0"},
		{Path: "[0].points[2]", Expected: `"after-commit"`, Observed: `"before-commit"`},
		{Path: "[1].processed_events", Expected: "1", Observed: "0"},
		{Path: "[1].follow_up_jobs", Expected: "1", Observed: "2"},
		{Path: "[1].crashed_at", Expected: "(absent)", Observed: `"after-commit"`},
		{Path: ".", Expected: "2 items", Observed: "3 items"},
	}}
	want := []string{
		"delivery 2 follow_up_jobs want 1 got 2",
		"delivery 2 processed_events want 1 got 0",
		"delivery 1 exit code want 17 got 0",
		`delivery 1 point 3 passed want "after-commit" got "before-commit"`,
		`delivery 2 crash point want (absent) got "after-commit"`,
		"deliveries want 2 items got 3 items",
	}
	if diff := cmp.Diff(want, scenario.Lines(scenario.Explanation(Scenario{}.Explain, c))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
