package redelivery_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/protocol"
	"idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

var event = redelivery.Event{ID: "agent-run-042:completed", JobKey: "review-agent-run-042"}

type crashExit struct{}

// deliverInProcess runs one delivery against the file at path and returns
// what it did in the model's terms, the rows read from the file after it.
// A crash is simulated by cancelling the transaction's context, which
// makes database/sql roll the open transaction back as a dead process's
// hot journal would be, and by unwinding out of Deliver.
func deliverInProcess(t *testing.T, path string, p redelivery.Pattern, crashAt string) redelivery.Modelled {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, _, err := sqlitedb.Open(context.Background(), redelivery.Options(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := redelivery.EnsureSchema(ctx, db); err != nil {
		t.Fatal(err)
	}
	call := protocol.NewCall("redelivery.deliver", nil, nil, io.Discard, io.Discard, crashAt, func(int) {
		cancel()
		panic(crashExit{})
	})
	var d redelivery.Modelled
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(crashExit); !ok {
					panic(v)
				}
				d.CrashedAt = crashAt
			}
		}()
		if _, err := redelivery.Deliver(ctx, db, p, event, call.Points); err != nil {
			t.Fatal(err)
		}
	}()
	d.Points = call.Points.Passed()
	d.After.Jobs, d.After.Processed = count(t, path)
	return d
}

func count(t *testing.T, path string) (jobs, processed int) {
	t.Helper()
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, redelivery.Options(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM follow_up_jobs), (SELECT count(*) FROM processed_events)").Scan(&jobs, &processed); err != nil {
		t.Fatal(err)
	}
	return jobs, processed
}

// TestEveryCrashPoint discovers each pattern's points from a normal
// delivery, crashes the first delivery at each of them against a real
// file, redelivers, and compares both deliveries with the commit model.
func TestEveryCrashPoint(t *testing.T) {
	for _, p := range redelivery.Patterns {
		discovered := deliverInProcess(t, filepath.Join(t.TempDir(), "probe.sqlite3"), p, "").Points
		if len(discovered) < 3 {
			t.Fatalf("%s: discovered only %v", p, discovered)
		}
		if diff := cmp.Diff(redelivery.PointsOf(p), discovered); diff != "" {
			t.Errorf("%s: the model's points differ from the worker's (-model +worker):\n%s", p, diff)
		}
		for _, point := range append([]string{""}, discovered...) {
			name := string(p) + "/" + point
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "events.sqlite3")
				got := []redelivery.Modelled{deliverInProcess(t, path, p, point), deliverInProcess(t, path, p, "")}
				want := redelivery.Deliveries(p, point, 2)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("deliveries differ from the model (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestArticleDuplicate pins the article's headline fact independently of
// the oracle: separate commits crashed after the job's commit leave two
// jobs after redelivery; one transaction never does.
func TestArticleDuplicate(t *testing.T) {
	tests := []struct {
		pattern  redelivery.Pattern
		crashAt  string
		wantJobs int
	}{
		{redelivery.SeparateCommit, redelivery.PointAfterJobCommit, 2},
		{redelivery.SingleTransaction, redelivery.PointBeforeCommit, 1},
		{redelivery.SingleTransaction, redelivery.PointAfterCommit, 1},
	}
	for _, tt := range tests {
		t.Run(string(tt.pattern)+"/"+tt.crashAt, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.sqlite3")
			deliverInProcess(t, path, tt.pattern, tt.crashAt)
			deliverInProcess(t, path, tt.pattern, "")
			if jobs, processed := count(t, path); jobs != tt.wantJobs || processed != 1 {
				t.Errorf("rows %d / %d, want %d / 1", jobs, processed, tt.wantJobs)
			}
		})
	}
}
