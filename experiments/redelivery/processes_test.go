package redelivery

import (
	"testing"

	"idemlab/experiments/scenariotest"
)

// TestProcessesMatchARun: the progress total is the plan's count, so a
// real run must start exactly that many processes.
func TestProcessesMatchARun(t *testing.T) {
	scenariotest.CheckProcesses(t, New(), section, nil)
}
