package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"idemlab/worker/sqlitedb"
)

func TestPostgresRebind(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"},
		{"SELECT '?' , ?", "SELECT '?' , $1"},
	} {
		if got := (Postgres{}).Rebind(tt.in); got != tt.want {
			t.Errorf("Rebind(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (SQLite{}).Rebind("a = ?"); got != "a = ?" {
		t.Errorf("SQLite Rebind changed the query: %q", got)
	}
}

// TestReadTable tells a missing table from an empty one and hands each
// row over in the query's order.
func TestReadTable(t *testing.T) {
	ctx := context.Background()
	st, err := OpenSQLite(ctx, sqlitedb.Options{Path: filepath.Join(t.TempDir(), "t.sqlite3"), JournalMode: "DELETE", Synchronous: "FULL", BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	row := func(scan func(...any) error) error {
		var s string
		err := scan(&s)
		got = append(got, s)
		return err
	}
	if ok, err := st.ReadTable(ctx, "t", "SELECT v FROM t", row); ok || err != nil {
		t.Fatalf("missing table: ok %v, %v", ok, err)
	}
	if _, err := st.DB.ExecContext(ctx, "CREATE TABLE t (v TEXT, n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ReadTable(ctx, "t", "SELECT v FROM t", row); !ok || err != nil || got != nil {
		t.Fatalf("empty table: ok %v, %v, rows %q", ok, err, got)
	}
	if _, err := st.DB.ExecContext(ctx, "INSERT INTO t VALUES ('b', 2), ('a', 1), ('c', 3)"); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ReadTable(ctx, "t", "SELECT v FROM t WHERE n > ? ORDER BY v", row, 1); !ok || err != nil || strings.Join(got, ",") != "b,c" {
		t.Errorf("rows: ok %v, %v, %q; want b,c", ok, err, got)
	}
	if _, err := st.ReadTable(ctx, "t", "SELECT nope FROM t", row); err == nil || !strings.Contains(err.Error(), "read t") {
		t.Errorf("a bad query gave %v, want an error naming the table", err)
	}
}
