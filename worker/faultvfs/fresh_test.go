package faultvfs_test

import (
	"context"
	"path/filepath"
	"testing"

	"idemlab/worker/sqlitedb"
)

// TestFreshDatabase covers a main database a worker creates itself, with no
// Baseline: SQLite never syncs the folder for it, so its name rides on the
// first directory sync of its journal or WAL.
func TestFreshDatabase(t *testing.T) {
	tests := []struct {
		journal    string
		wantTables int
		why        string
	}{
		{"DELETE", 0, "the first journal's deletion is not durable; it comes back recording an empty database and the rollback truncates the file"},
		{"WAL", 1, "the WAL commit is synced, and its first sync also synced the folder"},
	}
	for _, tt := range tests {
		t.Run(tt.journal, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fresh.sqlite3")
			db := openVFS(t, path, tt.journal, "FULL")
			t.Cleanup(func() { db.Close() })
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)"); err != nil {
				t.Fatal(err)
			}
			cut, rep := cutCopy(t, path)
			if got := tables(t, cut, tt.journal); got != tt.wantTables {
				t.Errorf("after the cut %d tables, want %d (%s); recovery: %+v", got, tt.wantTables, tt.why, rep)
			}
		})
	}
}

// tables counts the tables in path after an integrity check.
func tables(tb testing.TB, path, journal string) int {
	tb.Helper()
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, options(path, journal, "FULL", ""))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		tb.Fatalf("integrity_check of %s: %q, %v", path, check, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table'").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
