package suite_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// worded is a scenario whose Explain names "winners" first and "row"
// after it; it runs nothing.
type worded struct{ name string }

func (w worded) Name() string         { return w.name }
func (worded) Summary() string        { return "" }
func (worded) Flags() []scenario.Flag { return nil }
func (worded) Caps() scenario.Caps    { return scenario.Caps{} }
func (worded) Plan(context.Context, scenario.PlanRequest) (scenario.Plan, error) {
	return nil, nil
}
func (worded) Check(_ string, e, o json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(e, o)
}
func (worded) Compare(results.ScenarioResult) (scenario.Compared, error) {
	return scenario.Compared{}, nil
}
func (worded) Expect(json.RawMessage) ([]scenario.Expected, error) { return nil, nil }
func (worded) Fold(json.RawMessage, results.Records) (scenario.Folded, []results.Finding) {
	return scenario.Folded{}, nil
}
func (worded) Report(results.ScenarioResult) (scenario.Section, error) {
	return scenario.Section{}, nil
}
func (worded) Explain(c results.ConditionResult) []scenario.Explained {
	return scenario.EachDifference(c, func(p scenario.Path) (string, scenario.Rank) {
		switch p.Key(len(p) - 1) {
		case "winners":
			return "race B winners", scenario.RankWinners
		case "claimed_at":
			return "race B row claimed_at", scenario.RankRows
		}
		return "", scenario.Unranked
	})
}

// TestFailures shows that a failure line leads with the answer: a
// condition's findings first, then its differences headline first, at most
// three with a count of the rest; a scenario's own findings get a line.
func TestFailures(t *testing.T) {
	claimedAt := results.Difference{Path: "[0].outcome[1].row.claimed_at", Expected: `"A:now"`, Observed: `"B:now"`}
	winners := results.Difference{Path: "[0].outcome[1].winners", Expected: "0", Observed: "1"}
	other := results.Difference{Path: "[0].outcome[1].row.count", Expected: "1", Observed: "2"}
	finding := results.Finding{File: results.ProcessesFile, Field: "line 4: stdout", Condition: "c", Message: "delivery 2 reported job_inserted=false, but follow_up_jobs went 1 → 2"}
	res := &results.Results{Scenarios: []results.ScenarioResult{
		{Name: "claim", Conditions: []results.ConditionResult{
			{Name: "passes", Pass: true, Differences: []results.Difference{winners}},
			{Name: "5-at-boundary/ttl", Differences: []results.Difference{claimedAt, winners}},
			{Name: "with a finding", Differences: []results.Difference{claimedAt, other, winners}, Findings: []results.Finding{finding}},
			{Name: "only a finding", Findings: []results.Finding{finding}},
		}, Findings: []results.Finding{{File: results.ObservationsFile, Field: "line 9", Message: "one race more than the settings give"}}},
		{Name: "unknown", Conditions: []results.ConditionResult{{Name: "c", Differences: []results.Difference{claimedAt}}}},
	}}
	reg := scenario.Registry{worded{name: "claim"}}
	want := []string{
		`claim/5-at-boundary/ttl: race B winners want 0 got 1; race B row claimed_at want "A:now" got "B:now"`,
		`claim/with a finding: delivery 2 reported job_inserted=false, but follow_up_jobs went 1 → 2; race B winners want 0 got 1; race B row claimed_at want "A:now" got "B:now" (+1 more)`,
		`claim/only a finding: delivery 2 reported job_inserted=false, but follow_up_jobs went 1 → 2`,
		`claim: observations.jsonl: line 9: one race more than the settings give`,
		`unknown/c: [0].outcome[1].row.claimed_at want "A:now" got "B:now"`,
	}
	if diff := cmp.Diff(want, suite.Failures(reg, res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
