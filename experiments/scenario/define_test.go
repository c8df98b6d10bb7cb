package scenario_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"idemlab/experiments/backend"
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

// typed is a typed scenario that records what reached it. It says
// nothing in Explain and Compare, and declares what caps holds.
type typed struct {
	expected *int
	caps     scenario.Caps
	// planned is the request its Plan got.
	planned *scenario.PlanRequest
}

func (typed) Name() string              { return "typed" }
func (typed) Summary() string           { return "" }
func (t typed) Caps() scenario.Caps     { return t.caps }
func (typed) Flags() []scenario.Flag    { return nil }
func (typed) Validate(st bounded) error { return st.Validate() }
func (t typed) Plan(_ context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	if t.planned != nil {
		*t.planned = req
	}
	return nil, nil
}
func (typed) Check(_ string, e, o json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(e, o)
}
func (typed) Explain(results.ConditionResult) []scenario.Explained { return nil }
func (typed) Compare(bounded, results.ScenarioResult, struct{}) scenario.Compared {
	return scenario.Compared{}
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

// TestDefinePlansOnDeclaredBackends: Define plans a typed scenario on the
// backends its Caps declare, with the zero backend read as SQLite and
// absent files as none, and refuses any other backend with the refusal
// line, in the scenario's own words where it gives them.
func TestDefinePlansOnDeclaredBackends(t *testing.T) {
	pg := backend.Spec{Name: "postgres", Isolation: "read-committed"}
	tests := []struct {
		name    string
		caps    scenario.Caps
		backend backend.Spec
		// want is the backend the typed Plan sees, or "" for a refusal
		// that reads refusal.
		want, refusal string
	}{
		{"the zero backend is SQLite", scenario.Caps{}, backend.Spec{}, "sqlite", ""},
		{"SQLite needs no declaring", scenario.Caps{}, backend.SQLite, "sqlite", ""},
		{"a declared backend plans", scenario.Caps{Backends: []string{"postgres"}}, pg, "postgres", ""},
		{"undeclared, said why", scenario.Caps{NotOn: "it needs SQLite's VFS"}, pg, "",
			"scenario typed cannot run on postgres: it needs SQLite's VFS; run it without --backend postgres"},
		{"undeclared, no reason given", scenario.Caps{}, pg, "",
			"scenario typed cannot run on postgres: it has not been ported from SQLite; run it without --backend postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got scenario.PlanRequest
			s := scenario.Define[bounded, struct{}](typed{caps: tt.caps, planned: &got})
			_, err := s.Plan(context.Background(), scenario.PlanRequest{Backend: tt.backend})
			if tt.refusal != "" {
				if err == nil || err.Error() != tt.refusal || !errors.Is(err, backend.ErrNotOnBackend) {
					t.Fatalf("Plan = %v, want the refusal %q", err, tt.refusal)
				}
				if got.Backend.Name != "" {
					t.Errorf("the typed Plan ran on %s after a refusal", got.Backend.Name)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Backend.Name != tt.want {
				t.Errorf("the typed Plan got backend %q, want %q", got.Backend.Name, tt.want)
			}
			if _, err := got.Files.ReadFile("x.json"); err == nil || !strings.Contains(err.Error(), "x.json: this plan was given no files") {
				t.Errorf("reading from a request without files: %v, want a refusal naming the file", err)
			}
		})
	}
}
