package scenario_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// bounded are settings with a limit beyond their JSON shape.
type bounded struct {
	N int `json:"n"`
}

func (b bounded) Validate() error {
	if b.N < 1 || b.N > 3 {
		return errors.New("n: want 1 to 3")
	}
	return nil
}

// typed is a typed scenario that records what reached it.
type typed struct{ expected *int }

func (typed) Name() string           { return "typed" }
func (typed) Summary() string        { return "" }
func (typed) Flags() []scenario.Flag { return nil }
func (typed) Plan(json.RawMessage, map[string]string) (scenario.Plan, error) {
	return nil, nil
}
func (t typed) Expect(st bounded) ([]scenario.Expected, error) {
	*t.expected = st.N
	return []scenario.Expected{{Condition: "a", Value: st.N}}, nil
}
func (typed) Fold(st bounded, _ results.Records) (scenario.Folded, []results.Finding) {
	return scenario.Folded{Observed: map[string]any{"a": st.N}}, nil
}
func (typed) Report(bounded, results.ScenarioResult, struct{}) (scenario.Section, error) {
	return scenario.Section{}, nil
}

// TestDefineValidates: settings out of their limits never reach the typed
// methods; Expect and Report refuse them and Fold makes a finding of them.
func TestDefineValidates(t *testing.T) {
	var got int
	s := scenario.Define[bounded, struct{}](typed{expected: &got})
	if _, err := s.Expect(json.RawMessage(`{"n": 2}`)); err != nil || got != 2 {
		t.Fatalf("valid settings: %v, the oracle saw %d", err, got)
	}
	got = 0
	bad := json.RawMessage(`{"n": 9}`)
	if _, err := s.Expect(bad); err == nil || !strings.Contains(err.Error(), "not typed settings: n: want 1 to 3") || got != 0 {
		t.Errorf("Expect(n=9) = %v, the oracle saw %d; want a refusal naming n", err, got)
	}
	if _, err := s.Report(results.ScenarioResult{Settings: bad}); err == nil {
		t.Error("Report took settings out of their limits")
	}
	_, findings := s.Fold(bad, results.Records{})
	if len(findings) != 1 || findings[0].Field != "scenarios[typed].settings" || !strings.Contains(findings[0].Message, "n: want 1 to 3") {
		t.Errorf("Fold(n=9) findings %+v, want one on scenarios[typed].settings", findings)
	}
}
