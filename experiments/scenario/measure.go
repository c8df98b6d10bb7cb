package scenario

import (
	"encoding/json"

	"idemlab/experiments/results"
)

// Measurements folds rec again and collects the derived fields its
// scenario declares measurements (results.MeasureTag): each condition's
// under "observed" and the condition's name, the extra table's under
// "extra". The declaration sits on the Go types the fold returns, so a
// new field is a measurement only where its author tagged it.
func Measurements(s Scenario, settings json.RawMessage, rec results.Records) *results.Measures {
	m := &results.Measures{}
	folded, _ := s.Fold(settings, rec)
	for name, obs := range folded.Observed {
		m.Mark(obs, "observed", name)
	}
	if folded.Extra != nil {
		m.Mark(folded.Extra, "extra")
	}
	return m
}

// Replayable is the part of a derived result that a second run with the
// same input and overrides must give again: res itself with the
// measurements of m left out of every condition's observed figures and of
// the extra table. Settings, expected figures, differences, findings and
// verdicts stay as they are.
func Replayable(res results.ScenarioResult, m *results.Measures) results.ScenarioResult {
	out := res
	out.Conditions = make([]results.ConditionResult, len(res.Conditions))
	for i, c := range res.Conditions {
		c.Observed = Marshal(m.Strip(c.Observed, "observed", c.Name))
		out.Conditions[i] = c
	}
	if len(res.Extra) > 0 {
		out.Extra = Marshal(m.Strip(res.Extra, "extra"))
	}
	return out
}
