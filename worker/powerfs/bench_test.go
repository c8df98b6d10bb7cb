package powerfs_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/sqlitedb"
)

// BenchmarkMount starts a server, waits for its mount and unmounts it;
// mount-ms is the median from the start of the process to "mounted".
//
//	go test -run '^$' -bench 'Mount' -benchtime 30x ./worker/powerfs/
func BenchmarkMount(b *testing.B) {
	requireFUSE(b)
	var took []time.Duration
	for b.Loop() {
		cfg := trial(b, powerfs.Params{})
		m, err := powerfs.Start(context.Background(), "", cfg)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, m.MountTook)
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "mount-ms")
}

// BenchmarkCommitOnMount is one journaled commit (DELETE/FULL: BEGIN, one
// UPDATE, COMMIT) by this process on the backing folder's own filesystem,
// through the fault VFS, and on a powerfs mount, each on a database of its
// own. Every iteration commits once on each, in a rotating order, so load
// from other processes on a shared machine falls on all three alike; it
// reports each one's median and the mount's ratio to the other two.
//
//	go test -run '^$' -bench 'CommitOnMount' -benchtime 300x ./worker/powerfs/
func BenchmarkCommitOnMount(b *testing.B) {
	requireFUSE(b)
	ctx := context.Background()
	layers := []string{"backing", "faultvfs", "mount"}
	dbs := make([]*sql.DB, len(layers))
	for i, layer := range layers {
		cfg := trial(b, powerfs.Params{})
		path := filepath.Join(cfg.Backing, "bench.db")
		opts := sqlitedb.Options{Path: path, JournalMode: "DELETE", Synchronous: "FULL", BusyTimeout: 5 * time.Second}
		setup, _, err := sqlitedb.Open(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := setup.ExecContext(ctx, "CREATE TABLE c(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO c VALUES (1, 0)"); err != nil {
			b.Fatal(err)
		}
		setup.Close()
		switch layer {
		case "faultvfs":
			if err := faultvfs.Baseline(cfg.Backing); err != nil {
				b.Fatal(err)
			}
			opts.VFS = faultvfs.Name
		case "mount":
			m, err := powerfs.Start(ctx, "", cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if err := m.Close(); err != nil {
					b.Error(err)
				}
			})
			opts.Path = filepath.Join(cfg.Mountpoint, "bench.db")
		}
		db, _, err := sqlitedb.Open(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	commit := func(db *sql.DB) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE c SET n = n + 1 WHERE id = 1"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	took := make([][]time.Duration, len(layers))
	r := 0
	for b.Loop() {
		for k := range layers {
			i := (k + r) % len(layers)
			t0 := time.Now()
			commit(dbs[i])
			took[i] = append(took[i], time.Since(t0))
		}
		r++
	}
	med := make([]float64, len(layers))
	for i, layer := range layers {
		slices.Sort(took[i])
		med[i] = float64(took[i][len(took[i])/2].Microseconds()) / 1000
		b.ReportMetric(med[i], layer+"-ms")
	}
	b.ReportMetric(med[2]/med[1], "mount-x-faultvfs")
	b.ReportMetric(med[2]/med[0], "mount-x-backing")
}
