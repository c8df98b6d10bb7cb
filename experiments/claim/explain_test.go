package claim

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// TestExplain names the failure in the reader's words, winners
// first, and opens a split of the repetitions into the fields that differ.
func TestExplain(t *testing.T) {
	race := func(name string, winners int, claimedAt string) RaceOutcome {
		return RaceOutcome{Race: name, Workers: 8, Winners: winners, Row: RowSummary{Present: true, Count: 1, ClaimedAt: claimedAt}}
	}
	expected := []Group{{Outcome: []RaceOutcome{race("A", 1, "A:now"), race("B", 0, "A:now")}, Repetitions: []int{1, 2, 3, 4}}}
	split := []Group{
		{Outcome: expected[0].Outcome, Repetitions: []int{1, 2}},
		{Outcome: []RaceOutcome{race("A", 1, "A:now"), race("B", 1, "B:now")}, Repetitions: []int{3, 4}},
	}
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	tests := []struct {
		name string
		c    results.ConditionResult
		want []string
	}{
		{"the issue's line", results.ConditionResult{Expected: raw(expected), Differences: []results.Difference{
			{Path: "[0].outcome[1].row.claimed_at", Expected: `"A:now"`, Observed: `"B:now"`},
			{Path: "[0].outcome[1].winners", Expected: "0", Observed: "1"},
		}}, []string{`race B winners want 0 got 1`, `race B row claimed_at want "A:now" got "B:now"`}},
		{"repetitions split", results.ConditionResult{Expected: raw(expected), Observed: raw(split), Differences: []results.Difference{
			{Path: ".", Expected: "1 items", Observed: "2 items"},
		}}, []string{`race B winners (repetitions 3, 4) want 0 got 1`, `race B row claimed_at (repetitions 3, 4) want "A:now" got "B:now"`}},
		{"a race missing", results.ConditionResult{Expected: raw(expected), Differences: []results.Difference{
			{Path: "[0].outcome", Expected: "2 items", Observed: "1 items"},
		}}, []string{`races want 2 items got 1 items`}},
		{"a mutant survived", results.ConditionResult{Differences: []results.Difference{
			{Path: ".killed", Expected: "true", Observed: "false"},
		}}, []string{`mutant killed want true got false`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, scenario.Lines(scenario.Explanation(Scenario{}.Explain, tt.c))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
