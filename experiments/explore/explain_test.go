package explore

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// TestExplain names the crash point of a sweep's outcome and the outcome
// of a histogram, duplicates first.
func TestExplain(t *testing.T) {
	obs := json.RawMessage(`{"outcomes":[{"point":"after-job-insert","outcome":"not-done"},{"point":"after-job-commit","outcome":"duplicate-2"}]}`)
	c := results.ConditionResult{Observed: obs, Differences: []results.Difference{
		{Path: "violating_points", Expected: "{}", Observed: "{after-job-commit}"},
		{Path: "outcomes[0].outcome", Expected: "one of {clean}", Observed: "not-done"},
		{Path: "outcomes[1].outcome", Expected: "one of {clean}", Observed: "duplicate-2"},
		{Path: "timing.histogram.duplicate-3", Expected: "one of {clean}", Observed: "3 trials"},
		{Path: "timing.histogram", Expected: "20 trials in all", Observed: "19"},
		{Path: "stale_refused", Expected: "2", Observed: "0"},
		{Path: "points", Expected: "at least one point", Observed: "none"},
		{Path: "timing.serialization_errors", Expected: "0 under READ COMMITTED", Observed: "2 retried, 0 racers ended on one"},
	}}
	want := []string{
		"crash at after-job-commit outcome want one of {clean} got duplicate-2",
		"outcome want one of {clean} got duplicate-3 in 3 trials",
		"stale sends the receiver refused want 2 got 0",
		"points where a crash breaks an invariant want {} got {after-job-commit}",
		"crash at after-job-insert outcome want one of {clean} got not-done",
		"serialization failures (40001/40P01) the racers met want 0 under READ COMMITTED got 2 retried, 0 racers ended on one",
		"trials counted want 20 trials in all got 19",
		"crash points discovered want at least one point got none",
	}
	if diff := cmp.Diff(want, scenario.Lines(scenario.Explanation(Scenario{}.Explain, c))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
