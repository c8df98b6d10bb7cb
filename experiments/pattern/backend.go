package pattern

import (
	"encoding/json"
	"fmt"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
)

// PlanOn is not used: a pattern run on any backend reads its files, so
// the suite plans it with PlanFilesOn.
func (Scenario) PlanOn(b backend.Spec, _ json.RawMessage, _ map[string]string) (scenario.Plan, error) {
	return nil, fmt.Errorf("%s: the pattern scenario reads pattern files; plan it on %s with PlanFilesOn", Name, b.Name)
}
