package claim

import (
	"testing"

	"idemlab/experiments/scenariotest"
)

// TestProcessesMatchARun: the progress total is the plan's count, so a
// real run must start exactly that many processes: the pool's members.
func TestProcessesMatchARun(t *testing.T) {
	in := string(section(t, smallInput(3, 1)))
	scenariotest.CheckProcesses(t, New(), in, map[string]string{"repetitions": "1", "mutant-repetitions": "1"})
}
