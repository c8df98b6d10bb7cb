package claim

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// TestCancelledServerCheckIsNoRefusal stops the server check of a user's
// statement with a signal while the server is busy with it: the statement
// reads a table that another session holds locked, so its prepare waits on
// the server until the context is cancelled. The check must then keep
// context.Canceled in its chain and choose no usage error (exit 2), which
// would blame the user's SQL for the Ctrl-C; the edge makes it exit 130.
// The same statement with the lock released is checked as before: it
// passes.
func TestCancelledServerCheckIsNoRefusal(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	ctx := context.Background()
	srv, err := backend.Start(ctx, backend.Spec{Name: store.BackendPostgres, SynchronousCommit: "off"}, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	db, err := srv.Fresh(ctx, "blocker")
	if err != nil {
		t.Fatal(err)
	}
	holder, err := db.Open(ctx, sqlitedb.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	blocker := db.Session.Schema + ".blocker"
	if _, err := holder.ExecContext(ctx, "CREATE TABLE "+blocker+" (fp TEXT)"); err != nil {
		t.Fatal(err)
	}
	q := "INSERT INTO event_claims AS c (fingerprint, source, level, message, first_seen, last_seen, count, claimed_at) " +
		"VALUES (:fp, :source, :level, :message, :ts, :ts, 1, :now) ON CONFLICT (fingerprint) DO UPDATE SET claimed_at = EXCLUDED.claimed_at " +
		"WHERE (c.claimed_at IS NULL OR c.claimed_at < :cutoff) AND NOT EXISTS (SELECT 1 FROM " + blocker + ")"
	st := Settings{User: &UserClaim{Claim: Statement{File: "mine.sql", SQL: q}}}
	env := scenario.Env{Backend: srv}

	tx, err := holder.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "LOCK TABLE "+blocker+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	checkCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- st.checkOnServer(checkCtx, env) }()
	waitForLockWaiter(t, tx, blocker, done)
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) || errors.Is(err, errclass.ErrUsage) {
		t.Errorf("err = %v; want one that wraps context.Canceled and no %v", err, errclass.ErrUsage)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := st.checkOnServer(ctx, env); err != nil {
		t.Errorf("with the lock released and the context live: %v, want the statement to pass", err)
	}
}

// waitForLockWaiter returns once a session waits for a lock on table, and
// fails the test if the check ended first (tx is the lock holder's
// transaction, which sees the other sessions' locks) or no session waits within a
// minute.
func waitForLockWaiter(tb testing.TB, tx *sql.Tx, table string, done <-chan error) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			tb.Fatalf("the check ended before it waited on the lock: %v", err)
		default:
		}
		var n int
		err := tx.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass", table).Scan(&n)
		if err != nil {
			tb.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("no session waited on %s's lock within a minute", table)
}
