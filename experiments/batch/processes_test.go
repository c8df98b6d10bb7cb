package batch

import (
	"testing"

	"idemlab/experiments/scenariotest"
)

// TestProcessesMatchARun: the progress total is the plan's count, so a
// real run must start exactly that many processes: every run and resolve
// of both modes and all four conditions. TestPostgresBatch counts the
// same on PostgreSQL.
func TestProcessesMatchARun(t *testing.T) {
	scenariotest.CheckProcesses(t, New(), fixtureInput, map[string]string{FlagConcurrentModes: "true"})
}
