package redelivery

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"idemlab/experiments/harness"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// reportMedian adds the median of ds as a metric; a mean over a few
// hundred spawns on a noisy 2-core machine is dragged by outliers.
func reportMedian(b *testing.B, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
}

// BenchmarkChildDelivery is the round trip of one real delivery: spawn the
// harness binary as a worker, open the file with the article's pragmas, run
// one single-transaction delivery of a new event, exit, and parse the
// report. The file and its tables exist beforehand, as they do for every
// delivery but a condition's first, so one transaction is timed.
func BenchmarkChildDelivery(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	r := &harness.Runner{Executable: exe}
	path := filepath.Join(b.TempDir(), "events.sqlite3")
	db, _, err := sqlitedb.Open(context.Background(), wr.Options(path))
	if err != nil {
		b.Fatal(err)
	}
	if err := wr.EnsureSchema(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	db.Close()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := r.Run(context.Background(), harness.Spec{
			Worker: wr.WorkerName,
			Args:   wr.Args{DB: path, Pattern: wr.SingleTransaction, Event: wr.Event{ID: fmt.Sprint("e", i), JobKey: "k"}}.Argv(),
		})
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds)
}

// BenchmarkSpawnOnly is the floor under BenchmarkChildDelivery: the same
// binary started and stopped with no database work (an unknown worker name
// exits 2 right after start-up).
func BenchmarkSpawnOnly(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := exec.Command(exe, "worker", "bench.none").Run(); err == nil {
			b.Fatal("unknown worker exited 0")
		}
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds)
}

// BenchmarkRawCommit is the cost of the delivery's transaction alone, in
// process, on the article's DELETE + FULL settings: the part of a delivery
// that is SQLite and fsync rather than process start-up.
func BenchmarkRawCommit(b *testing.B) {
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, wr.Options(filepath.Join(b.TempDir(), "raw.sqlite3")))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := wr.EnsureSchema(ctx, db); err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		id := fmt.Sprint("e", i)
		if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO processed_events (event_id) VALUES (?)", id); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)", id, "k"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds)
}
