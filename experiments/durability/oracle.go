package durability

import (
	"encoding/json"
	"fmt"
	"sort"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Trial is one trial's observed figures, derived by the fold.
type Trial struct {
	Outcome   string `json:"outcome"`
	FirstExit int    `json:"first_exit"`
	// RowsLost counts rows the first process left that the cut took back.
	RowsLost  int    `json:"rows_lost"`
	Integrity string `json:"integrity"`
	// Recovered lists "file:action" for every file the cut changed.
	Recovered []string `json:"recovered,omitempty"`
}

// Expect is the oracle: per condition, per point (the model's points and
// PointACK), the outcomes the durability model allows.
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, c := range st.Conditions {
		exp := map[string][]string{}
		for _, pt := range append([]string{PointACK}, Points(c.Pattern, st.Items)...) {
			a, err := Allowed(c.Pattern, c.Setting(), st.Items, pt)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			exp[pt] = a
		}
		out = append(out, scenario.Expected{Condition: c.Name, Value: exp})
	}
	return out, nil
}

// Check passes a condition when the same points were tried as the model
// has, and each trial's outcome is in its allowed set.
func (Scenario) Check(_ string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	var exp map[string][]string
	var obs map[string]Trial
	if err := json.Unmarshal(expected, &exp); err != nil {
		return false, nil, fmt.Errorf("expected: %w", err)
	}
	if err := json.Unmarshal(observed, &obs); err != nil {
		return false, nil, fmt.Errorf("observed: %w", err)
	}
	var diffs []results.Difference
	for _, pt := range sortedKeys(exp) {
		o, ok := obs[pt]
		switch {
		case !ok:
			diffs = append(diffs, results.Difference{Path: "[" + pt + "]", Expected: fmt.Sprint(exp[pt]), Observed: "(not tried)"})
		case !Allows(exp[pt], o.Outcome):
			diffs = append(diffs, results.Difference{Path: "[" + pt + "].outcome", Expected: fmt.Sprintf("one of %v", exp[pt]), Observed: o.Outcome})
		}
	}
	for _, pt := range sortedKeys(obs) {
		if _, ok := exp[pt]; !ok {
			diffs = append(diffs, results.Difference{Path: "[" + pt + "]", Expected: "(no such point in the model)", Observed: obs[pt].Outcome})
		}
	}
	return len(diffs) == 0, diffs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
