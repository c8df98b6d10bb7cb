package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/store"
)

// TestSpecSession: a spec's session, read-back, title and report row all
// come from its one level value.
func TestSpecSession(t *testing.T) {
	type forms struct {
		Session   store.Session
		Requested *store.PGRequested
		Title     string
		Row       [2]string
	}
	rb := &store.PGSettings{ServerVersion: "15.4", Fsync: "on", WalLevel: "replica"}
	for _, tt := range []struct {
		spec Spec
		want forms
	}{
		{Spec{Name: "postgres", Isolation: "repeatable-read", SynchronousCommit: "off"}, forms{
			Session:   store.Session{Base: "host=h", Schema: "s_1", Isolation: store.RepeatableRead, SynchronousCommit: "off"},
			Requested: &store.PGRequested{Isolation: "repeatable read", SynchronousCommit: "off"},
			Title:     "PostgreSQL, repeatable read, synchronous_commit off",
			Row:       [2]string{"PostgreSQL", "default_transaction_isolation=repeatable read, synchronous_commit=off; read back from server 15.4: fsync=on, wal_level=replica"},
		}},
		{SQLite, forms{
			Session: store.Session{Base: "host=h", Schema: "s_1"},
			Title:   "SQLite",
			Row:     [2]string{"SQLite", "journal_mode=WAL"},
		}},
	} {
		t.Run(tt.spec.String(), func(t *testing.T) {
			got := forms{Session: tt.spec.Session("host=h", "s_1"), Requested: tt.spec.Requested(), Title: tt.spec.String()}
			got.Row = DatabaseRow(got.Requested, rb, "journal_mode=WAL")
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestSpecLevels: a run that covers every level runs them all, unless
// the input or --isolation chose one.
func TestSpecLevels(t *testing.T) {
	var all []string
	for _, l := range store.Isolations {
		all = append(all, l.String())
	}
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"default level", Spec{Name: store.BackendPostgres, Isolation: store.Isolations[0].String()}, all},
		{"level chosen", Spec{Name: store.BackendPostgres, Isolation: store.Isolations[1].String(), IsolationChosen: true}, []string{store.Isolations[1].String()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.spec.Levels()); diff != "" {
				t.Errorf("levels (-want +got):\n%s", diff)
			}
		})
	}
}
