package redelivery

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// breaks are deliberately broken delivery workers, one per kind of
// misbehaviour. Each runs the real worker on the first delivery, so every
// condition's crash happens as the settings say, and misbehaves on the
// redelivery. They exist only in this test binary; a test chooses one
// with worker.EnvBreak.
var breaks = worker.Breaks{
	// Wrong rows: the job is inserted although the event was processed,
	// and the worker says so.
	"wrong-rows": {wr.WorkerName: onRedelivery(insertAnyway(true))},
	// A report the rows contradict: the same, but the worker says it
	// inserted no job.
	"lying-report": {wr.WorkerName: onRedelivery(insertAnyway(false))},
	"exit-5": {wr.WorkerName: onRedelivery(func(call *protocol.Call) int {
		if code := wr.Main(call); code != protocol.ExitACK {
			return code
		}
		return 5
	})},
	"panic": {wr.WorkerName: onRedelivery(func(*protocol.Call) int {
		panic("broken on purpose: the handler panics on redelivery")
	})},
	"sql-error": {wr.WorkerName: onRedelivery(uniqueJob)},
	"no-report": {wr.WorkerName: onRedelivery(func(call *protocol.Call) int {
		call.Stdout = io.Discard
		return wr.Main(call)
	})},
}

// onRedelivery runs broken when the condition's file already exists, that
// is on every delivery after the first, and the real worker otherwise.
func onRedelivery(broken worker.Func) worker.Func {
	return func(call *protocol.Call) int {
		d, err := wr.ParseArgs(call.Args)
		if err != nil {
			return call.Usage(err)
		}
		if _, err := os.Stat(d.DB); err == nil {
			return broken(call)
		}
		return wr.Main(call)
	}
}

// handler is a broken handler as a worker: it opens the delivery's file
// as the real worker does, makes the schema, runs body and reports the
// outcome body gives; an error from body is the worker's error.
func handler(body func(ctx context.Context, db *sql.DB, a wr.Args, pts *protocol.Points) (wr.Outcome, error)) worker.Func {
	return func(call *protocol.Call) int {
		a, err := wr.ParseArgs(call.Args)
		if err != nil {
			return call.Usage(err)
		}
		ctx := context.Background()
		db, settings, err := sqlitedb.Open(ctx, wr.Options(a.DB))
		if err != nil {
			return call.Fail(err)
		}
		defer db.Close()
		if err := wr.EnsureSchema(ctx, db); err != nil {
			return call.Fail(err)
		}
		out, err := body(ctx, db, a, call.Points)
		if err != nil {
			return call.Fail(err)
		}
		return call.Finish(wr.Result{Pattern: a.Pattern, Outcome: out, Settings: settings}, protocol.ExitACK)
	}
}

// insertAnyway is the single-transaction pattern that inserts the job
// whether or not its claim of the event took. honest says whether it then
// reports that job.
func insertAnyway(honest bool) worker.Func {
	return handler(func(ctx context.Context, db *sql.DB, a wr.Args, pts *protocol.Points) (wr.Outcome, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return wr.Outcome{}, err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO processed_events (event_id) VALUES (?)", a.Event.ID)
		if err != nil {
			return wr.Outcome{}, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return wr.Outcome{}, err
		}
		pts.Hit(wr.PointAfterProcessedInsert)
		if _, err := tx.ExecContext(ctx, "INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)", a.Event.ID, a.Event.JobKey); err != nil {
			return wr.Outcome{}, err
		}
		pts.Hit(wr.PointBeforeCommit)
		if err := tx.Commit(); err != nil {
			return wr.Outcome{}, err
		}
		pts.Hit(wr.PointAfterCommit)
		return wr.Outcome{AlreadyProcessed: n == 0, JobInserted: honest || n == 1}, nil
	})
}

// uniqueJob is a handler whose schema makes the job key unique and which
// inserts the job before it looks at anything: a redelivery fails on the
// constraint, and the worker exits with the error.
var uniqueJob = handler(func(ctx context.Context, db *sql.DB, a wr.Args, _ *protocol.Points) (wr.Outcome, error) {
	if _, err := db.ExecContext(ctx, "CREATE UNIQUE INDEX IF NOT EXISTS follow_up_jobs_job_key ON follow_up_jobs (job_key)"); err != nil {
		return wr.Outcome{}, err
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)", a.Event.ID, a.Event.JobKey); err != nil {
		return wr.Outcome{}, fmt.Errorf("insert job: %w", err)
	}
	res, err := db.ExecContext(ctx, "INSERT OR IGNORE INTO processed_events (event_id) VALUES (?)", a.Event.ID)
	if err != nil {
		return wr.Outcome{}, err
	}
	n, err := res.RowsAffected()
	return wr.Outcome{AlreadyProcessed: n == 0, JobInserted: true}, err
})

// TestMisbehavingWorkers runs the scenario with each broken worker, by
// real processes: the run records every process and goes on, writes its
// folder with pass: false and exits 1, the condition fails with a finding
// that names the contradiction (or, for wrong rows honestly reported, with
// the oracle's difference), and verify derives the same findings and
// exits 4.
func TestMisbehavingWorkers(t *testing.T) {
	const cond = "single-transaction/normal"
	tests := []struct {
		brk string
		// finding is a finding message the condition holds; diff, when
		// set, is a difference "path: want X got Y" it holds instead.
		finding, diff string
	}{
		{brk: "wrong-rows", diff: "[1].follow_up_jobs: want 1 got 2"},
		{brk: "lying-report", finding: "delivery 2 reported job_inserted=false, but follow_up_jobs went 1 → 2"},
		{brk: "exit-5", finding: "delivery 2 exited 5; a delivery ends in 0 (ACK) or 17 (crash)"},
		{brk: "panic", finding: "delivery 2 panicked (exit 2): broken on purpose: the handler panics on redelivery"},
		{brk: "sql-error", finding: "delivery 2 exited 3 (worker error): worker redelivery.deliver: insert job: UNIQUE constraint failed: follow_up_jobs.job_key"},
		{brk: "no-report", finding: "delivery 2: no report line on stdout"},
	}
	input := `{"redelivery": ` + section + `}`
	for _, tt := range tests {
		t.Run(tt.brk, func(t *testing.T) {
			t.Setenv(worker.EnvBreak, tt.brk)
			res := scenariotest.RunFailing(t, scenario.Registry{New()}, input, nil)
			if tt.diff == "" {
				scenariotest.FailsWith(t, res, Name, cond, tt.finding)
				return
			}
			c, _ := scenariotest.ConditionOf(res, Name, cond)
			var got []string
			for _, d := range c.Differences {
				got = append(got, fmt.Sprintf("%s: want %s got %s", d.Path, d.Expected, d.Observed))
			}
			if c.Pass || !strings.Contains(strings.Join(got, "\n"), tt.diff) {
				t.Errorf("%s: pass %v, differences:\n%s\nwant %q", cond, c.Pass, strings.Join(got, "\n"), tt.diff)
			}
			if fs := scenariotest.AllFindings(res); len(fs) > 0 {
				t.Errorf("an honest report of wrong rows gives findings %v; the oracle's differences are the verdict", fs)
			}
		})
	}
}

// TestUnknownBreakRefused shows that a breakage name the test binary does
// not know never runs the real workers: the child exits 2 and says so.
func TestUnknownBreakRefused(t *testing.T) {
	t.Setenv(worker.EnvBreak, "no-such-breakage")
	res := scenariotest.RunFailing(t, scenario.Registry{New()}, `{"redelivery": `+section+`}`, nil)
	scenariotest.FailsWith(t, res, Name, "separate-commit/normal", `delivery 1 exited 2 (usage error): worker: IDEMLABTEST_BREAK="no-such-breakage" names no breakage`)
}
