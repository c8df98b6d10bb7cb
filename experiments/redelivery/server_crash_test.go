package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/store"
)

// TestServerCrashOracle pins what the oracle says a server crash leaves,
// written out by hand: every commit under on and local, none of delivery
// 1's under off, after which the redelivery is a first delivery.
func TestServerCrashOracle(t *testing.T) {
	c := func(j, p int) *CrashRows { return &CrashRows{FollowUpJobs: j, ProcessedEvents: p} }
	for _, tt := range []struct {
		sync   string
		cond   Condition
		crash  *CrashRows
		second [2]int
	}{
		{"on", ServerCrashConditions()[0], c(1, 0), [2]int{2, 1}},
		{"local", ServerCrashConditions()[1], c(1, 1), [2]int{1, 1}},
		{"off", ServerCrashConditions()[0], c(0, 0), [2]int{1, 1}},
		{"off", ServerCrashConditions()[2], c(0, 0), [2]int{1, 1}},
	} {
		st := Settings{Deliveries: 2, Postgres: &store.PGRequested{Isolation: "read committed", SynchronousCommit: tt.sync}}
		ds := Expect(st, tt.cond)
		if fmt.Sprint(ds[0].AfterServerCrash) != fmt.Sprint(tt.crash) || ds[1].FollowUpJobs != tt.second[0] || ds[1].ProcessedEvents != tt.second[1] || ds[1].AfterServerCrash != nil {
			t.Errorf("%s %s: after the crash %v, then %d / %d; want %v, then %v", tt.sync, tt.cond.Name, ds[0].AfterServerCrash, ds[1].FollowUpJobs, ds[1].ProcessedEvents, tt.crash, tt.second)
		}
	}
	if _, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: map[string]string{FlagServerCrash: "true"}}); err == nil {
		t.Error("--server-crash on SQLite planned")
	}
}

// TestPostgresServerCrashScenario runs the scenario with --server-crash
// under synchronous_commit on, local and off, and reaches the verdict as
// the experiment does: the server's process group SIGKILLed after a
// delivery's ACK or at its crash point, restarted, recovered, the event
// redelivered. Under off the oracle (TestServerCrashOracle) says the
// acknowledged delivery is lost.
func TestPostgresServerCrashScenario(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	for _, sync := range store.SynchronousCommit {
		t.Run(sync, func(t *testing.T) {
			spec := backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: sync}
			srv, err := backend.Start(context.Background(), spec, backend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			out := scenariotest.RunOn(t, New(), spec, srv, section, map[string]string{FlagServerCrash: "true"})
			if len(out.Findings) > 0 {
				t.Fatalf("findings: %v", out.Findings)
			}
			for _, c := range out.Result.Conditions {
				if !c.Pass {
					t.Errorf("%s: %+v", c.Name, c.Differences)
				}
			}
		})
	}
}
