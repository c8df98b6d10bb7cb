package batch

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// TestPostgresJournal runs the journal's article rules on a throwaway
// PostgreSQL cluster through the same code as on SQLite: a mark, a read,
// the resolve's refusals and its change, a schema without the table
// refused as not a journal, and the rows as the parent reads them.
func TestPostgresJournal(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	ctx := context.Background()
	spec := backend.Spec{Name: store.BackendPostgres, Isolation: "serializable", SynchronousCommit: "off"}
	srv, err := backend.Start(ctx, spec, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	db, err := srv.Fresh(ctx, "journal")
	if err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournalOn(ctx, db.Backend, db.Target, true)
	if err != nil {
		t.Fatal(err)
	}
	if j.Postgres == nil || j.Postgres.DefaultTransactionIsolation != "serializable" {
		t.Errorf("the journal's session read back %+v", j.Postgres)
	}
	k := wire.Key{Job: "job-1", Item: "item-001", Step: StepNotify}
	if err := j.Mark(ctx, k, InFlight, "d1", "", ""); err != nil {
		t.Fatal(err)
	}
	states, err := j.ItemStates(ctx, k.Job, k.Item, "d1")
	if err != nil || states[2] != (ItemState{Status: InFlight, SameDigest: true}) {
		t.Errorf("item states %+v, %v", states, err)
	}
	if err := j.Resolve(ctx, k, true, ""); !errors.Is(err, ErrReceiptRequired) {
		t.Errorf("resolve without receipt: %v", err)
	}
	if err := j.Resolve(ctx, k, true, "rcpt-1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Resolve(ctx, k, false, ""); !errors.Is(err, ErrAlreadySucceeded) {
		t.Errorf("resolve of a SUCCEEDED row: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := db.Open(ctx, Options(""))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := ReadJournal(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want := []JournalRow{{Job: "job-1", Item: "item-001", Step: StepNotify, Status: string(Succeeded), Digest: "d1", Receipt: "rcpt-1", UpdatedAt: rows[0].UpdatedAt}}
	if d := cmp.Diff(want, rows); d != "" || rows[0].UpdatedAt < 1e9 {
		t.Errorf("rows (-want +got):\n%s (updated_at %f)", d, rows[0].UpdatedAt)
	}
	empty, err := srv.Fresh(ctx, "journal")
	if err != nil {
		t.Fatal(err)
	}
	if err := ResolveFile(ctx, ResolveArgs{DB: empty.Target, Key: k, Backend: store.BackendPostgres}); !errors.Is(err, ErrNotJournal) || !errors.Is(err, ErrResolveUsage) {
		t.Errorf("resolve on a schema without the table: %v", err)
	}
}
