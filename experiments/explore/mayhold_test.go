package explore

import (
	"encoding/json"
	"testing"

	"idemlab/experiments/pattern"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
)

// TestArticleRacesMayHold: in explore, a known-unsafe article class that
// the OS schedules (the races) passes whether or not its few rounds
// broke, since the interleaving is the scheduler's; a seeded class the
// file lists must still break, and a class the file does not list must
// still hold.
func TestArticleRacesMayHold(t *testing.T) {
	st := pattern.Settings{
		Patterns: []pattern.Pattern{{File: wp.File{Name: "p", KnownUnsafe: []string{wp.FaultPoints, wp.FaultConcurrent}}}},
		Conditions: []pattern.Condition{
			{Name: "p/none", Pattern: "p", Fault: pattern.FaultNone},
			{Name: "p/points", Pattern: "p", Fault: wp.FaultPoints},
			{Name: "p/concurrent", Pattern: "p", Fault: wp.FaultConcurrent},
		},
	}
	exp, err := articleExpect([]pattern.Settings{st})
	if err != nil {
		t.Fatal(err)
	}
	expected := map[string]json.RawMessage{}
	for _, e := range exp {
		expected[e.Condition] = scenario.Marshal(e.Value)
	}
	held, broke := scenario.Marshal(pattern.Verdict{Violated: false}), scenario.Marshal(pattern.Verdict{Violated: true})
	tests := []struct {
		cond     string
		observed json.RawMessage
		pass     bool
	}{
		{"p/concurrent", held, true},
		{"p/concurrent", broke, true},
		{"p/points", held, false},
		{"p/points", broke, true},
		{"p/none", broke, false},
		{"p/none", held, true},
	}
	for _, tt := range tests {
		pass, diffs, err := Scenario{}.Check(tt.cond, expected[tt.cond], tt.observed)
		if err != nil || pass != tt.pass {
			t.Errorf("%s: expected %s, observed %s: pass %v (%v, %v), want %v", tt.cond, expected[tt.cond], tt.observed, pass, diffs, err, tt.pass)
		}
	}
}
