package batch

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// TestExplain names differences by trial, duplicates and sends first, and
// joins the same miss in several trials.
func TestExplain(t *testing.T) {
	c := results.ConditionResult{Differences: []results.Difference{
		{Path: "[0].runs[1].executed_by_step.send", Expected: "10", Observed: "50"},
		{Path: "[0].journal_rows.SUCCEEDED", Expected: "150", Observed: "149"},
		{Path: "[0].duplicates", Expected: "0", Observed: "1"},
		{Path: "[1].duplicates", Expected: "0", Observed: "1"},
		{Path: "[2].duplicates", Expected: "0", Observed: "1"},
		{Path: "[4].duplicates", Expected: "0", Observed: "2"},
		{Path: "[2].accepts", Expected: "50", Observed: "51"},
		{Path: "[3].steps", Expected: "30", Observed: "150"},
		{Path: "[3].resolved", Expected: "1 items", Observed: "0 items"},
		{Path: "[3].runs[0].status", Expected: `"failed"`, Observed: `"crashed"`},
		{Path: ".", Expected: "5 items", Observed: "4 items"},
	}}
	want := []string{
		"trials 1–3 duplicates want 0 got 1",
		"trial 5 duplicates want 0 got 2",
		"trial 3 accepts at the receiver want 50 got 51",
		"trial 4 steps executed by the last run want 30 got 150",
		"trial 1 journal rows SUCCEEDED want 150 got 149",
		"trial 1 run 2 executed_by_step send want 10 got 50",
		"trial 4 resolves want 1 items got 0 items",
		`trial 4 run 1 status want "failed" got "crashed"`,
		"trials want 5 items got 4 items",
	}
	if diff := cmp.Diff(want, scenario.Lines(scenario.Explanation(Scenario{}.Explain, c))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
