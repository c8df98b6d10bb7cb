package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"idemlab/worker/sqlitedb"
)

func TestPostgresBindNamed(t *testing.T) {
	args := []sql.NamedArg{sql.Named("fp", "a"), sql.Named("now", int64(5)), sql.Named("cutoff", int64(1))}
	for _, tt := range []struct {
		in, want string
		args     []any
	}{
		{"VALUES (:fp, :now) WHERE x < :cutoff", "VALUES ($1, $2) WHERE x < $3", []any{"a", int64(5), int64(1)}},
		{"VALUES (:now, :fp, :now)", "VALUES ($1, $2, $1)", []any{int64(5), "a"}},
		{"SELECT ':fp', x::text, :fp", "SELECT ':fp', x::text, $1", []any{"a"}},
		{"SELECT :missing", "SELECT :missing", nil},
		// An apostrophe in a comment opens no string, and nothing in a
		// comment or a quoted name binds.
		{"-- the user's claim :fp\nVALUES (:fp) /* it's :now */", "-- the user's claim :fp\nVALUES ($1) /* it's :now */", []any{"a"}},
		{`SELECT ":fp", 'it''s :fp', :now`, `SELECT ":fp", 'it''s :fp', $1`, []any{int64(5)}},
		{"SELECT 1 -- :fp to the end", "SELECT 1 -- :fp to the end", nil},
	} {
		got, gotArgs := (Postgres{}).BindNamed(tt.in, args)
		if got != tt.want || !cmp.Equal(gotArgs, tt.args) {
			t.Errorf("BindNamed(%q) = %q %v, want %q %v", tt.in, got, gotArgs, tt.want, tt.args)
		}
	}
}

// TestClassify classifies real SQLite errors and PostgreSQL errors by
// their SQLSTATE, so a retry decision never depends on the backend.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	st, err := OpenSQLite(ctx, sqlitedb.Options{Path: filepath.Join(t.TempDir(), "c.sqlite3"), JournalMode: "DELETE", Synchronous: "FULL", BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(ctx, "CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	_, dupErr := st.ExecContext(ctx, "INSERT INTO t VALUES ('a', 'x'), ('a', 'y')")
	_, nullErr := st.ExecContext(ctx, "INSERT INTO t VALUES ('b', NULL)")
	_, colErr := st.ExecContext(ctx, "INSERT INTO t (k, nope) VALUES ('c', 1)")
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	for _, tt := range []struct {
		d    Dialect
		err  error
		want Class
	}{
		{SQLite{}, dupErr, ClassUnique},
		{SQLite{}, nullErr, ClassOther},
		{SQLite{}, colErr, ClassUndefinedColumn},
		{SQLite{}, errors.New("plain"), ClassOther},
		{Postgres{}, pg(CodeSerialization), ClassSerialization},
		{Postgres{}, pg(CodeDeadlock), ClassDeadlock},
		{Postgres{}, pg(CodeUnique), ClassUnique},
		{Postgres{}, pg(CodeUndefinedColumn), ClassUndefinedColumn},
		{Postgres{}, pg("42P01"), ClassOther},
		{Postgres{}, dupErr, ClassOther},
	} {
		if got := tt.d.Classify(tt.err); got != tt.want {
			t.Errorf("%s.Classify(%v) = %s, want %s", tt.d.Name(), tt.err, got, tt.want)
		}
	}
	for c, want := range map[Class]bool{ClassBusy: true, ClassSerialization: true, ClassDeadlock: true, ClassUnique: false, ClassUndefinedColumn: false, ClassOther: false} {
		if c.Retryable() != want {
			t.Errorf("%s.Retryable() = %v, want %v", c, c.Retryable(), want)
		}
	}
}

// TestSessionKey: two connection strings that differ in their schema
// alone share a session; one that differs in a setting does not.
func TestSessionKey(t *testing.T) {
	base := "host=/tmp/x user=u dbname=d"
	a := Session{Base: base, Schema: "s1", Isolation: Serializable, SynchronousCommit: "on"}.DSN()
	b := Session{Base: base, Schema: "s2", Isolation: Serializable, SynchronousCommit: "on"}.DSN()
	c := Session{Base: base, Schema: "s1", Isolation: ReadCommitted, SynchronousCommit: "on"}.DSN()
	ka, sa, okA := SessionKey(a)
	kb, sb, okB := SessionKey(b)
	kc, _, okC := SessionKey(c)
	if !okA || !okB || !okC || ka != kb || ka == kc || sa != "s1" || sb != "s2" {
		t.Errorf("keys %q %q %q, schemas %q %q", ka, kb, kc, sa, sb)
	}
	if _, _, ok := SessionKey("host='unterminated"); ok {
		t.Error("an unparsable string gave a key")
	}
}
