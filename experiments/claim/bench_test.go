package claim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/store"
)

// ErrNoWinner is returned by the benchmark when a fingerprint ended with no
// winner or with more than one.
var ErrNoWinner = errors.New("not exactly one winner")

// benchClaims is how many distinct fingerprints every process claims per
// race; each of them is claimed by all P processes.
const benchClaims = 500

// BenchmarkClaimRace releases P real processes behind the barrier, each
// claiming the same benchClaims fingerprints in a loop with the TTL claim,
// and checks that every fingerprint has exactly one winner. claims/s is all
// claims over the slowest process's loop time, which leaves process start
// and exit out; busy-retries/op are SQLITE_BUSY results seen after the busy
// timeout.
func BenchmarkClaimRace(b *testing.B) {
	benchClaimRace(b, scenario.Env{TempDir: b.TempDir()})
}

// BenchmarkClaimRacePostgres is BenchmarkClaimRace on a throwaway
// PostgreSQL cluster under READ COMMITTED with synchronous_commit on, the
// server's defaults: each process claims on its own session, and
// retries/op are 40001 and 40P01 retries (none are expected there).
func BenchmarkClaimRacePostgres(b *testing.B) {
	if _, err := backend.FindBinaries(); err != nil {
		b.Skipf("PostgreSQL benchmark skipped: %v", err)
	}
	srv, err := backend.Start(context.Background(), backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: backend.DefaultSynchronousCommit}, backend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	benchClaimRace(b, scenario.Env{TempDir: b.TempDir(), Backend: srv})
}

func benchClaimRace(b *testing.B, env scenario.Env) {
	for _, procs := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			e := harnesstest.New(b)
			var claims int
			var loop time.Duration
			busy := 0
			for i := 0; i < b.N; i++ {
				n, elapsed, retries, err := benchRace(b, e.Runner, env, procs)
				if err != nil {
					b.Fatal(err)
				}
				claims += n
				loop += elapsed
				busy += retries
			}
			b.ReportMetric(float64(claims)/loop.Seconds(), "claims/s")
			b.ReportMetric(float64(busy)/float64(b.N), "retries/op")
		})
	}
}

func benchRace(b *testing.B, r *harness.Runner, env scenario.Env, procs int) (int, time.Duration, int, error) {
	ctx := context.Background()
	fresh, err := env.Fresh(ctx, "bench-", "bench.sqlite3")
	if err != nil {
		return 0, 0, 0, err
	}
	defer fresh.Drop()
	path := fresh.Target
	db, err := fresh.Open(ctx, wc.Options("", 5*time.Second))
	if err != nil {
		return 0, 0, 0, err
	}
	err = errors.Join(wc.CreateSchema(ctx, db.DB, wc.SchemaNew), db.Close())
	if err != nil {
		return 0, 0, 0, err
	}
	backendArg := ""
	if fresh.Backend != store.BackendSQLite {
		backendArg = fresh.Backend
	}
	racers := make([]harness.Racer, procs)
	for i := range racers {
		racers[i] = harness.Racer{Spec: harness.Spec{
			Scenario: Name, Condition: "bench", Label: fmt.Sprintf("bench-w%d", i+1), Worker: wc.BenchWorker,
			Args: wc.BenchArgs{Count: benchClaims, ClaimerArgs: wc.ClaimerArgs{
				DB: path, Variant: wc.TTL, TTLMS: 300000, BusyTimeoutMS: 5000, ReadyFD: harness.BarrierReadyFD, Backend: backendArg,
				Event: wc.Event{Fingerprint: "bench", Source: "bench", Level: "info", Message: "m"},
			}}.Argv(),
		}}
	}
	ps, err := harness.RunBarrier(ctx, r, racers)
	if err != nil {
		return 0, 0, 0, err
	}
	wins := make([]int, benchClaims)
	var slowest float64
	busy := 0
	for _, p := range ps {
		var res wc.BenchResult
		if err := harness.DecodeResult(p.Report, &res); err != nil {
			return 0, 0, 0, err
		}
		for _, w := range res.Won {
			wins[w]++
		}
		busy += res.BusyRetries + res.SerializationRetries + res.DeadlockRetries
		slowest = max(slowest, res.ElapsedMS)
	}
	for i, w := range wins {
		if w != 1 {
			return 0, 0, 0, fmt.Errorf("fingerprint %s: %d winners: %w", wc.BenchFingerprint("bench", i), w, ErrNoWinner)
		}
	}
	if err := checkBenchRows(ctx, fresh); err != nil {
		return 0, 0, 0, err
	}
	return procs * benchClaims, time.Duration(slowest * float64(time.Millisecond)), busy, nil
}

// checkBenchRows reads the file back: one row per fingerprint, each claimed
// once.
func checkBenchRows(ctx context.Context, fresh backend.Database) error {
	db, err := fresh.Open(ctx, wc.Options("", 5*time.Second))
	if err != nil {
		return err
	}
	defer db.Close()
	var rows, total int
	if err := db.DB.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(count), 0) FROM event_claims").Scan(&rows, &total); err != nil {
		return fmt.Errorf("count claim rows: %w", err)
	}
	if rows != benchClaims || total != benchClaims {
		return fmt.Errorf("%d rows with %d claims in total, want %d and %d: %w", rows, total, benchClaims, benchClaims, ErrNoWinner)
	}
	return nil
}
