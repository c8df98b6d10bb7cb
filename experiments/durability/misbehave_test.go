package durability

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// breaks are deliberately broken deliveries. They exist only in this test
// binary; a test chooses one with worker.EnvBreak.
var breaks = worker.Breaks{
	// A power-loss filesystem whose cut keeps everything, even under drop:
	// the fs layer's cross-check must fail on it.
	breakFSKeep: {powerfs.WorkerName: powerfs.BrokenKeepMain},
	// A first process (the one the harness gives a crash kind) that does
	// its work and exits 5 instead of acknowledging it.
	"first-exits-5": {wr.WorkerName: func(call *protocol.Call) int {
		code := wr.Main(call)
		if os.Getenv(protocol.EnvCrashKind) != "" && code == protocol.ExitACK {
			return 5
		}
		return code
	}},
}

// TestMisbehavingFirstProcess runs one condition of the matrix with a
// first process that exits outside the protocol, by real processes: the
// run goes on to every crash point the normal run reported, writes its
// folder with pass: false and exits 1, the condition fails with a finding
// that names the exit, and verify derives the same findings and exits 4.
func TestMisbehavingFirstProcess(t *testing.T) {
	t.Setenv(worker.EnvBreak, "first-exits-5")
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "WAL", FlagSynchronous: "EXTRA", FlagKind: KindKill}
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: []byte(`{}`), Overrides: flags})
	if err != nil {
		t.Fatal(err)
	}
	conds := p.Settings().(Settings).Conditions
	if len(conds) != 1 {
		t.Fatalf("%d conditions, want 1", len(conds))
	}
	res := scenariotest.RunFailing(t, scenario.Registry{New()}, `{"durability": {}}`, flags)
	scenariotest.FailsWith(t, res, Name, conds[0].Name, "ack first exited 5; the first process ends in 0 or 17 (crash)")
	c, _ := scenariotest.ConditionOf(res, Name, conds[0].Name)
	var obs map[string]Trial
	if err := json.Unmarshal(c.Observed, &obs); err != nil || len(obs) != len(Points(PatternSingle, 0))+1+len(ExtraPoints(PatternSingle)) {
		t.Errorf("observed %s (%v); want the normal run, a trial per point and the ACKs with a connection open: the run went on", c.Observed, err)
	}
}
