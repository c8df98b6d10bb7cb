package cmd

// Readers of a pattern run's result, shared by the pattern tests.

import (
	"encoding/json"
	"testing"

	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
)

// decodeAs decodes one JSON value of a result into v.
func decodeAs(t *testing.T, what string, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// observedOf decodes the observed value of the named condition.
func observedOf(t *testing.T, s results.ScenarioResult, name string, v any) {
	t.Helper()
	for _, c := range s.Conditions {
		if c.Name == name {
			decodeAs(t, s.Name+" "+name, c.Observed, v)
			return
		}
	}
	t.Fatalf("%s has no condition %s", s.Name, name)
}

// patternRun is one pattern file's run as the cross-check reads it.
type patternRun struct {
	settings pattern.Settings
	extra    pattern.PatternExtra
}

func readPatternRun(t *testing.T, s results.ScenarioResult) patternRun {
	t.Helper()
	var p patternRun
	var x pattern.Extra
	decodeAs(t, "pattern settings", s.Settings, &p.settings)
	decodeAs(t, "pattern extra", s.Extra, &x)
	if len(x.Patterns) != 1 {
		t.Fatalf("pattern extra: %d patterns, want 1", len(x.Patterns))
	}
	p.extra = x.Patterns[0]
	return p
}

// condition is the pattern's condition of one fault class, or of one
// power setting.
func (p patternRun) condition(t *testing.T, fault, power string) pattern.ConditionExtra {
	t.Helper()
	for _, c := range p.extra.Conditions {
		if c.Fault == fault && c.Power == power {
			return c
		}
	}
	t.Fatalf("pattern %s has no %s %s condition", p.extra.Name, fault, power)
	return pattern.ConditionExtra{}
}
