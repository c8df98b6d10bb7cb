package scenariotest

import (
	"encoding/json"
	"testing"

	"idemlab/experiments/scenario"
)

// Planned is the number of worker processes the plan of s counts for
// section and overrides: what the progress total adds up.
func Planned(tb testing.TB, s scenario.Scenario, section string, overrides map[string]string) int {
	tb.Helper()
	p, err := s.Plan(tb.Context(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: overrides})
	if err != nil {
		tb.Fatalf("plan: %v", err)
	}
	return p.Processes()
}

// CheckProcesses runs s with real processes and fails unless the run
// recorded exactly the processes its plan counts.
func CheckProcesses(tb testing.TB, s scenario.Scenario, section string, overrides map[string]string) Outcome {
	tb.Helper()
	want := Planned(tb, s, section, overrides)
	out := Run(tb, s, section, overrides)
	if got := len(out.Records.Processes); got != want {
		tb.Errorf("%s: the run recorded %d processes, its plan counts %d", s.Name(), got, want)
	}
	return out
}
