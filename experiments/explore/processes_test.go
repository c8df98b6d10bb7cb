package explore

import (
	"testing"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
)

// TestProcessesMatchARun: the progress total is the plan's count. With
// one random trial per pattern (a crash at a seeded hit, no kill) every
// trial's size is fixed, and a real run starts exactly that many
// processes: discovery, the sweep and takeover at every point, the hit
// trials, and the races.
func TestProcessesMatchARun(t *testing.T) {
	in := `{"event_id": "e-1", "job_key": "k-1", "seed": 5, "trials": 1, "racers": [2], "rounds": 1, "parallel": 2, "max_attempts": 3, "items": 1}`
	scenariotest.CheckProcesses(t, scenario.Define[Settings, Extra](formatSix{}), in, nil)
}

// TestProcessesBoundKills: a kill on the batch journal runs a resolve
// only if it left a send in flight, so the plan counts the most, and the
// run may start up to one fewer per such trial.
func TestProcessesBoundKills(t *testing.T) {
	in := `{"event_id": "e-1", "job_key": "k-1", "seed": 5, "trials": 2, "racers": [], "rounds": 0, "parallel": 2, "max_attempts": 3, "items": 1}`
	sc := scenario.Define[Settings, Extra](formatSix{})
	want := scenariotest.Planned(t, sc, in, nil)
	out := scenariotest.Run(t, sc, in, nil)
	slack := 0
	for _, c := range NewSettings(Input{Trials: 2, Items: 1}, -1).Conditions {
		if c.Pattern == "batch-journal" && c.Kind == KindKill {
			slack += len(c.Trials)
		}
	}
	if got := len(out.Records.Processes); got > want || got < want-slack {
		t.Errorf("the run recorded %d processes; its plan counts %d, of which up to %d may not run", got, want, slack)
	}
}
