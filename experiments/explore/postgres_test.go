package explore

import (
	"context"
	"fmt"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/scenario"
	we "idemlab/worker/explore"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// TestPostgresConcurrentDeliveries releases K = 2, 4 and 8 deliveries of
// one event at once, behind the barrier, on a throwaway PostgreSQL cluster
// under each isolation level, for both redelivery patterns, and reads the
// tables after every round. One transaction claiming the event with
// INSERT … ON CONFLICT DO NOTHING must leave exactly one job in every
// round under every level: under READ COMMITTED the losers wait for the
// winner's row and insert nothing; under REPEATABLE READ and SERIALIZABLE
// they meet 40001, run again, and find the event processed. Separate
// commits give no such guarantee; the test logs the duplicates it saw.
func TestPostgresConcurrentDeliveries(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	ctx := context.Background()
	srv, err := backend.Start(ctx, backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: "off"}, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := harnesstest.New(t)
	const rounds = 3
	ev := wr.Event{ID: "agent-run-042:completed", JobKey: "review-agent-run-042"}
	for _, iso := range store.IsolationOrder {
		spec := backend.Spec{Name: store.BackendPostgres, Isolation: iso, SynchronousCommit: "off"}
		senv := scenario.Env{Backend: srv.WithSpec(spec)}
		for _, p := range wr.Patterns {
			for _, k := range []int{2, 4, 8} {
				t.Run(fmt.Sprintf("%s/%s/K=%d", iso, p, k), func(t *testing.T) {
					dup, serial := 0, 0
					for r := 0; r < rounds; r++ {
						jobs, processed, s := concurrentRound(t, env.Runner, senv, p, ev, k)
						serial += s
						if jobs > 1 {
							dup++
						}
						if processed != 1 || jobs < 1 || (p == wr.SingleTransaction && jobs != 1) {
							t.Errorf("round %d: %d jobs, %d processed records", r+1, jobs, processed)
						}
					}
					t.Logf("%d of %d rounds left a second job; %d serialization retries", dup, rounds, serial)
				})
			}
		}
	}
}

// concurrentRound runs one round on a fresh schema and returns the rows
// and the racers' serialization retries.
func concurrentRound(t *testing.T, r *harness.Runner, env scenario.Env, p wr.Pattern, ev wr.Event, k int) (jobs, processed, serial int) {
	t.Helper()
	ctx := context.Background()
	db, err := env.Fresh(ctx, "race", "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Open(ctx, wr.Options(""))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := wr.EnsureSchema(ctx, st.DB); err != nil {
		t.Fatal(err)
	}
	racers := make([]harness.Racer, k)
	for i := range racers {
		args := we.RaceArgs{Delivery: wr.Args{DB: db.Target, Pattern: p, Event: ev, Backend: db.Backend}, ReadyFD: harness.BarrierReadyFD, MaxAttempts: 20}
		racers[i] = harness.Racer{Spec: harness.Spec{Scenario: Name, Condition: "postgres", Label: fmt.Sprintf("racer %d", i), Worker: we.RacerName, Args: args.Argv(), Exits: []int{protocol.ExitACK, protocol.ExitWorkerError}}}
	}
	procs, err := harness.RunBarrier(ctx, r, racers)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range procs {
		var res we.RaceResult
		if err := harness.DecodeResult(pr.Report, &res); err != nil {
			t.Fatal(err)
		}
		if res.Error != "" && !(p == wr.SeparateCommit && res.ErrorClass == we.ClassConstraint) {
			t.Errorf("a racer failed: %s (%s)", res.Error, res.ErrorClass)
		}
		serial += res.SerializationErrors
	}
	s, err := wr.ReadState(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return len(s.FollowUpJobs), len(s.ProcessedEvents), serial
}
