package faultvfs_test

import (
	"context"
	"path/filepath"
	"testing"

	"idemlab/worker/faultvfs"
	"idemlab/worker/sqlitedb"
)

// BenchmarkJournaledStep measures one journaled step, BEGIN IMMEDIATE, one
// UPDATE, COMMIT, through the default VFS and through faultvfs, so the
// model's overhead can be quoted as a ratio per durability setting.
func BenchmarkJournaledStep(b *testing.B) {
	modes := []struct{ journal, sync string }{{"WAL", "NORMAL"}, {"WAL", "FULL"}, {"DELETE", "FULL"}}
	for _, m := range modes {
		for _, vfs := range []string{"", faultvfs.Name} {
			name := m.journal + "-" + m.sync + "/default"
			if vfs != "" {
				name = m.journal + "-" + m.sync + "/faultvfs"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				path := filepath.Join(b.TempDir(), "bench.sqlite3")
				setup, _, err := sqlitedb.Open(ctx, options(path, m.journal, "FULL", ""))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := setup.ExecContext(ctx, "CREATE TABLE c(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO c VALUES (1, 0)"); err != nil {
					b.Fatal(err)
				}
				setup.Close()
				if vfs != "" {
					if err := faultvfs.Baseline(filepath.Dir(path)); err != nil {
						b.Fatal(err)
					}
				}
				db, _, err := sqlitedb.Open(ctx, options(path, m.journal, m.sync, vfs))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				b.ResetTimer()
				start := faultvfs.Copied()
				defer func() { b.ReportMetric(float64(faultvfs.Copied()-start)/float64(b.N), "copied-B/op") }()
				for b.Loop() {
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
			})
		}
	}
}
