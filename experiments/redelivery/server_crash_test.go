package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// TestPostgresServerCrash crashes the server itself, not the worker: a
// delivery runs (to its ACK, or to a crash point of its own), then the
// server's whole process group is SIGKILLed and restarted, recovery runs,
// and the event is redelivered. With synchronous_commit on or local every
// commit the worker saw succeed survives, so the outcome is the commit
// model's; with off, a wal_writer_delay of 10 s and autovacuum off, so
// that no background flush and no other session's synchronous commit
// comes between, every commit of the delivery is lost, ACK or not:
// the server comes back as before the delivery, tables and all, and the
// redelivery starts over.
func TestPostgresServerCrash(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	ctx := context.Background()
	base := backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: "on"}
	srv, err := backend.Start(ctx, base, backend.Options{Settings: []string{"wal_writer_delay=10s", "autovacuum=off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := harnesstest.New(t)
	for _, sync := range store.SynchronousCommit {
		for _, c := range []Condition{
			{Name: "separate-commit/crash-after-job-commit", Pattern: wr.SeparateCommit, CrashAt: wr.PointAfterJobCommit},
			{Name: "separate-commit/ack", Pattern: wr.SeparateCommit},
			{Name: "single-transaction/ack", Pattern: wr.SingleTransaction},
		} {
			t.Run(sync+"/"+c.Name, func(t *testing.T) {
				spec := base
				spec.SynchronousCommit = sync
				p, err := Scenario{}.PlanOn(spec, json.RawMessage(section), nil)
				if err != nil {
					t.Fatal(err)
				}
				st := p.Settings().(Settings)
				db, err := srv.WithSpec(spec).Fresh(ctx, "crash")
				if err != nil {
					t.Fatal(err)
				}
				deliver := func(crashAt string) {
					t.Helper()
					_, err := env.Runner.Run(ctx, harness.Spec{Scenario: Name, Condition: c.Name, Worker: wr.WorkerName, Args: st.Args(c, db.Target).Argv(), CrashAt: crashAt})
					if err != nil {
						t.Fatal(err)
					}
				}
				deliver(c.CrashAt)
				before := rowCounts(t, db)
				if err := srv.Crash(ctx); err != nil {
					t.Fatal(err)
				}
				after := rowCounts(t, db)
				deliver("")
				redelivered := rowCounts(t, db)
				model := wr.Deliveries(c.Pattern, c.CrashAt, 2)
				want := []wr.Counts{model[0].After, model[0].After, model[1].After}
				if sync == "off" {
					// Nothing of the first delivery reached the disk: the
					// redelivery is a first delivery to a fresh schema.
					want = []wr.Counts{model[0].After, {}, wr.Deliveries(c.Pattern, "", 1)[0].After}
				}
				if got := []wr.Counts{before, after, redelivered}; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("rows before the crash, after it, after the redelivery: %v, want %v", got, want)
				}
			})
		}
	}
}

// rowCounts reads both tables' rows; a table the crash took away counts 0.
func rowCounts(t *testing.T, db backend.Database) wr.Counts {
	t.Helper()
	s, err := readState(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return wr.Counts{Jobs: len(s.FollowUpJobs), Processed: len(s.ProcessedEvents)}
}
