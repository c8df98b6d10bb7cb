package redelivery_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// TestArgsRoundTrip: what Argv renders, ParseArgs reads back, and the
// rendering is the command line the recorded folders hold.
func TestArgsRoundTrip(t *testing.T) {
	a := redelivery.Args{DB: "/tmp/x/events.sqlite3", Pattern: redelivery.SingleTransaction, Event: event}
	want := []string{"-db", "/tmp/x/events.sqlite3", "-pattern", "single-transaction", "-event-id", event.ID, "-job-key", event.JobKey}
	if diff := cmp.Diff(want, a.Argv()); diff != "" {
		t.Errorf("Argv (-want +got):\n%s", diff)
	}
	got, err := redelivery.ParseArgs(a.Argv())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("ParseArgs(Argv) (-want +got):\n%s", diff)
	}
}

// TestArgsBackend: SQLite's command line is as it always was, PostgreSQL's
// names the backend, and an explicit sqlite reads back as the default.
func TestArgsBackend(t *testing.T) {
	a := redelivery.Args{DB: "host=/x dbname=d", Pattern: redelivery.SeparateCommit, Event: event, Backend: "postgres"}
	got, err := redelivery.ParseArgs(a.Argv())
	if err != nil || got != a || !strings.HasSuffix(strings.Join(a.Argv(), " "), "-backend postgres") {
		t.Errorf("postgres round trip: %+v, %v (argv %q)", got, err, a.Argv())
	}
	got, err = redelivery.ParseArgs(append(redelivery.Args{DB: "f", Pattern: redelivery.SeparateCommit, Event: event}.Argv(), "-backend", "sqlite"))
	if err != nil || got.Backend != "" {
		t.Errorf("-backend sqlite read back as %q, %v; want the default", got.Backend, err)
	}
	if _, err := redelivery.ParseArgs(append(a.Argv(), "-backend", "oracle")); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("-backend oracle: %v", err)
	}
}

func TestParseArgsRefuses(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"-db", "f", "-pattern", "nope", "-event-id", "e", "-job-key", "k"}, "unknown pattern"},
		{[]string{"-pattern", "separate-commit", "-event-id", "e", "-job-key", "k"}, "are required"},
		{[]string{"-db", "f", "-pattern", "separate-commit", "-event-id", "e"}, "are required"},
		{[]string{"-db", "f", "-colour", "red"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		if _, err := redelivery.ParseArgs(tt.argv); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseArgs(%q) = %v, want an error containing %q", tt.argv, err, tt.want)
		}
	}
}

// TestModel pins the model against rows written out by hand from the
// transaction semantics.
func TestModel(t *testing.T) {
	c := func(j, p int) redelivery.Counts { return redelivery.Counts{Jobs: j, Processed: p} }
	tests := []struct {
		pattern redelivery.Pattern
		crashAt string
		want    []redelivery.Counts
	}{
		{redelivery.SeparateCommit, "", []redelivery.Counts{c(1, 1), c(1, 1)}},
		{redelivery.SeparateCommit, redelivery.PointAfterJobInsert, []redelivery.Counts{c(0, 0), c(1, 1)}},
		{redelivery.SeparateCommit, redelivery.PointAfterJobCommit, []redelivery.Counts{c(1, 0), c(2, 1)}},
		{redelivery.SingleTransaction, redelivery.PointBeforeCommit, []redelivery.Counts{c(0, 0), c(1, 1)}},
		{redelivery.SingleTransaction, redelivery.PointAfterCommit, []redelivery.Counts{c(1, 1), c(1, 1)}},
	}
	for _, tt := range tests {
		ds := redelivery.Deliveries(tt.pattern, tt.crashAt, 2)
		var got []redelivery.Counts
		for _, d := range ds {
			got = append(got, d.After)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s/%s (-want +got):\n%s", tt.pattern, tt.crashAt, diff)
		}
		if ds[0].CrashedAt != tt.crashAt || ds[1].CrashedAt != "" {
			t.Errorf("%s/%s crashed at %q then %q", tt.pattern, tt.crashAt, ds[0].CrashedAt, ds[1].CrashedAt)
		}
	}
}

// TestReadState reads a file without tables, with empty tables and with
// rows, and renders the rows as explore and durability record them.
func TestReadState(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, redelivery.Options(filepath.Join(t.TempDir(), "events.sqlite3")))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := redelivery.ReadState(ctx, st)
	if err != nil || s.FollowUpJobs != nil || s.ProcessedEvents != nil {
		t.Fatalf("a file without tables read as %+v, %v; want both tables nil", s, err)
	}
	if err := redelivery.EnsureSchema(ctx, st.DB); err != nil {
		t.Fatal(err)
	}
	s, err = redelivery.ReadState(ctx, st)
	if diff := cmp.Diff(redelivery.State{FollowUpJobs: []redelivery.Event{}, ProcessedEvents: []string{}}, s); err != nil || diff != "" {
		t.Fatalf("empty tables (%v) (-want +got):\n%s", err, diff)
	}
	for _, q := range []string{
		"INSERT INTO follow_up_jobs VALUES ('e2', 'k2'), ('e1', 'k1')",
		"INSERT INTO processed_events VALUES ('e2'), ('e1')",
	} {
		if _, err := st.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err = redelivery.ReadState(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{redelivery.TableJobs: {"e2|k2", "e1|k1"}, redelivery.TableProcessed: {"e1", "e2"}}
	if diff := cmp.Diff(want, s.Lines()); diff != "" {
		t.Errorf("Lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{redelivery.TableJobs: {}, redelivery.TableProcessed: {}}, redelivery.State{}.Lines()); diff != "" {
		t.Errorf("missing tables render (-want +got):\n%s", diff)
	}
}
