package batch

import (
	"context"
	"fmt"
	"io"
	"testing"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
)

// breaks are deliberately broken batch runs. They exist only in this test
// binary; a test chooses one with worker.EnvBreak.
var breaks = worker.Breaks{
	// Runs that do their work and report nothing.
	"no-report": {wb.WorkerRun: func(call *protocol.Call) int {
		call.Stdout = io.Discard
		return wb.RunMain(call)
	}},
	// Runs that panic before they touch anything.
	"panic": {wb.WorkerRun: func(*protocol.Call) int {
		panic("broken on purpose: the run panics")
	}},
	// Runs that open the journal's file, which creates it, and die
	// before they make its table.
	"dies-before-schema": {wb.WorkerRun: func(call *protocol.Call) int {
		a, err := wb.ParseRunArgs(call.Args)
		if err != nil {
			return call.Usage(err)
		}
		if a.Mode == wb.ModeJournal {
			db, _, err := sqlitedb.Open(context.Background(), wb.Options(a.DB))
			if err != nil {
				return call.Fail(err)
			}
			db.Close()
		}
		fmt.Fprintln(call.Stderr, "broken on purpose: the run dies before its table")
		return protocol.ExitWorkerError
	}},
}

// TestMisbehavingRuns runs the scenario with broken runs, by real
// processes: the run records every process and follows each trial's
// script to its end, writes its folder with pass: false and exits 1, each
// condition fails with a finding that quotes the run, and verify derives
// the same findings and exits 4.
func TestMisbehavingRuns(t *testing.T) {
	const sec = `{"job_id":"job-1","items":3,"fail_at":2,"modes":["before_accept"],"trials":1,"first_run_lanes":1,"latency_ms":{"validate":0,"transform":0,"send":0}}`
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: []byte(sec)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ brk, want string }{
		{"no-report", "trial 1 run 1: no report line on stdout"},
		{"panic", "trial 1 run 1 panicked (exit 2): broken on purpose: the run panics; a run ends in 0, 17 (crash) or 18 (step failed)"},
		{"dies-before-schema", "trial 1 run 1 exited 3 (worker error): broken on purpose: the run dies before its table; a run ends in 0, 17 (crash) or 18 (step failed)"},
	}
	for _, tt := range tests {
		t.Run(tt.brk, func(t *testing.T) {
			t.Setenv(worker.EnvBreak, tt.brk)
			res := scenariotest.RunFailing(t, scenario.Registry{New()}, `{"batch": `+sec+`}`, nil)
			for _, c := range p.Settings().(Settings).Conditions {
				scenariotest.FailsWith(t, res, Name, c.Name, tt.want)
			}
		})
	}
}
