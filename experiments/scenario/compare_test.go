package scenario_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// comparing is typed with a Compare that says each condition's observed
// figure, so a test can see what reached it.
type comparing struct{ typed }

func (comparing) Compare(st bounded, res results.ScenarioResult, _ struct{}) scenario.Compared {
	c := scenario.Compared{Database: fmt.Sprintf("n=%d", st.N), Outcomes: map[string]string{}}
	for _, cr := range res.Conditions {
		c.Outcomes[cr.Name] = string(cr.Observed)
	}
	return c
}

// TestDefineForwardsCompare: a typed scenario's Compare gets the decoded
// settings and the derived result; one whose Compare says nothing says
// nothing; and settings out of their limits are refused before Compare
// sees them.
func TestDefineForwardsCompare(t *testing.T) {
	var got int
	res := results.ScenarioResult{Settings: json.RawMessage(`{"n": 2}`), Conditions: []results.ConditionResult{{Name: "a", Observed: json.RawMessage(`2`)}}}
	c, err := scenario.Define[bounded, struct{}](comparing{typed{expected: &got}}).Compare(res)
	want := scenario.Compared{Database: "n=2", Outcomes: map[string]string{"a": "2"}}
	if err != nil || !cmp.Equal(c, want) {
		t.Errorf("Compare = %+v, %v; want %+v", c, err, want)
	}
	if c, err := scenario.Define[bounded, struct{}](typed{expected: &got}).Compare(res); err != nil || !cmp.Equal(c, scenario.Compared{}) {
		t.Errorf("Compare that says nothing = %+v, %v; want nothing said", c, err)
	}
	res.Settings = json.RawMessage(`{"n": 9}`)
	if _, err := scenario.Define[bounded, struct{}](comparing{typed{expected: &got}}).Compare(res); err == nil {
		t.Error("Compare took settings out of their limits")
	}
}
