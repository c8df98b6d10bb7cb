package explore

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenariotest"
)

// TestPointsModelMatchesDiscovery: each pattern's model of its points,
// which Processes counts with, is the list its worker's discovery
// delivery passed, for more than one item.
func TestPointsModelMatchesDiscovery(t *testing.T) {
	st := NewSettings(Input{EventID: "e-1", JobKey: "k-1", Seed: 5, Parallel: 2, MaxAttempts: 3, Items: 3}, -1)
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c Condition) bool { return c.Kind != KindDiscovery })
	out := scenariotest.RunPlan(t, New(sourceArticles(t)), &plan{s: st}, nil, nil)
	for _, ps := range st.Patterns {
		pat, _ := LookupPattern(ps.Name)
		i := slices.IndexFunc(out.Result.Conditions, func(c results.ConditionResult) bool { return c.Name == ps.Name+"/"+KindDiscovery })
		if i < 0 {
			t.Fatalf("no discovery of %s", ps.Name)
		}
		var d DiscoveryObserved
		if err := json.Unmarshal(out.Result.Conditions[i].Observed, &d); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pat.Points(st.params()), d.Points); diff != "" {
			t.Errorf("%s: points (-model +discovered):\n%s", ps.Name, diff)
		}
	}
}
