package durability

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// TestExplain names each difference by the point of the cut, duplicates
// first.
func TestExplain(t *testing.T) {
	obs := json.RawMessage(`{"ack":{"outcome":"lost-acked"},"after-job-commit":{"outcome":"rolled-back+duplicate"}}`)
	c := results.ConditionResult{Observed: obs, Differences: []results.Difference{
		{Path: "[ack].outcome", Expected: "one of [ok]", Observed: "lost-acked"},
		{Path: "[after-job-commit].outcome", Expected: "one of [ok rolled-back]", Observed: "rolled-back+duplicate"},
		{Path: "[before-commit]", Expected: "[ok]", Observed: "(not tried)"},
	}}
	want := []string{
		"cut at after-job-commit outcome want one of [ok rolled-back] got rolled-back+duplicate",
		"cut after the ACK outcome want one of [ok] got lost-acked",
		"cut at before-commit want [ok] got (not tried)",
	}
	if diff := cmp.Diff(want, scenario.Lines(scenario.Explanation(Scenario{}.Explain, c))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
