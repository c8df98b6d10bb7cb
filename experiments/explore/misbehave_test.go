package explore

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	we "idemlab/worker/explore"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// breaks are deliberately broken workers. They exist only in this test
// binary; a test chooses one with worker.EnvBreak.
var breaks = worker.Breaks{
	"misbehave": {
		// Deliveries that report no crash point, so a discovery finds
		// none to sweep.
		wr.WorkerName: func(call *protocol.Call) int {
			var out bytes.Buffer
			stdout := call.Stdout
			call.Stdout = &out
			code := wr.Main(call)
			rep, err := protocol.ParseReport(out.String())
			if err != nil {
				stdout.Write(out.Bytes())
				return code
			}
			rep.Points = []string{}
			b, _ := json.Marshal(rep)
			stdout.Write(append(b, '\n'))
			return code
		},
		// Racers that give up before the barrier.
		we.RacerName: func(call *protocol.Call) int {
			return call.Fail(errors.New("broken on purpose: the racer gives up before the barrier"))
		},
		// A lease holder that dies before it pauses; the others run as
		// registered.
		we.LeaseName: func(call *protocol.Call) int {
			if slices.Contains(call.Args, "-pause-at") {
				return call.Fail(errors.New("broken on purpose: the holder dies before it pauses"))
			}
			return we.LeaseMain(call)
		},
	},
}

// TestMisbehavingWorkers runs the scenario, by real processes, with
// deliveries whose discovery finds no point, racers that die before the
// barrier and lease holders that die before they pause. The run goes on
// past each of them, writes its folder with pass: false and exits 1; each
// condition fails on what its workers did, and verify derives the same
// findings and exits 4.
func TestMisbehavingWorkers(t *testing.T) {
	t.Setenv(worker.EnvBreak, "misbehave")
	ov := map[string]string{"trials": "0", "rounds": "1"}
	res := scenariotest.RunFailing(t, scenario.Registry{scenario.Define[Settings, Extra](formatSix{})}, `{"explore": `+section+`}`, ov)
	for _, p := range []wr.Pattern{wr.SeparateCommit, wr.SingleTransaction} {
		disc, _ := scenariotest.ConditionOf(res, Name, string(p)+"/"+KindDiscovery)
		if disc.Pass || !slices.ContainsFunc(disc.Differences, func(d results.Difference) bool {
			return d.Path == "points" && d.Expected == "at least one point" && d.Observed == "none"
		}) {
			t.Errorf("%s: pass %v, differences %+v; want no point found", disc.Name, disc.Pass, disc.Differences)
		}
		race := string(p) + "/timing-race-2"
		scenariotest.FailsWith(t, res, Name, race, "trial 000000 racer 00 exited 3 (worker error): worker explore.race: broken on purpose: the racer gives up before the barrier; only a racer ends in 3 (worker error), and with its result")
	}
	scenariotest.FailsWith(t, res, Name, "lease-batch/takeover-fenced", "exited 3 (worker error): worker explore.lease: broken on purpose: the holder dies before it pauses; only a racer ends in 3 (worker error), and with its result")
	// The patterns nothing broke still pass: the run went on.
	for _, name := range []string{"claim-ttl/sweep", "batch-journal/sweep"} {
		if c, _ := scenariotest.ConditionOf(res, Name, name); !c.Pass {
			t.Errorf("%s failed, though none of its workers is broken: %+v %+v", name, c.Differences, c.Findings)
		}
	}
	if t.Failed() {
		for _, f := range scenariotest.AllFindings(res) {
			t.Logf("finding: %s", strings.TrimSpace(f.String()))
		}
	}
}
