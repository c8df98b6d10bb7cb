package all

import (
	"os"
	"testing"
)

// TestEveryScenarioPricesItsProcesses: each registered scenario declares
// what one of its processes costs, so the ETA prices none of them at the
// default.
func TestEveryScenarioPricesItsProcesses(t *testing.T) {
	for _, s := range Scenarios(os.DirFS("../..")) {
		if c := s.Caps().Cost; c <= 0 {
			t.Errorf("scenario %s declares a cost of %v per process", s.Name(), c)
		}
	}
}
