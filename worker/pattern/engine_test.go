package pattern

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// fakeReceiver keeps the contract's answers: accepted once per key,
// replayed after.
type fakeReceiver struct {
	mu   sync.Mutex
	keys map[string]bool
	log  []string
}

func (r *fakeReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var sr wire.PublicSend
	json.NewDecoder(req.Body).Decode(&sr)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := wire.OutcomeAccepted
	if k := req.Header.Get(wire.HeaderIdempotencyKey); k != "" {
		if r.keys[k] {
			out = wire.OutcomeReplayed
		}
		r.keys[k] = true
	}
	r.log = append(r.log, sr.EventID+"/"+sr.Step+"/"+out)
	json.NewEncoder(w).Encode(wire.PublicReply{Outcome: out, Receipt: "r"})
}

type crashed struct{}

// deliver runs one delivery in-process; a crash at crashAt ends it as the
// point's exit would, without any cleanup.
func deliver(t *testing.T, f File, dbPath, url string, n int, crashAt string) (out Outcome, points []string, crash bool) {
	t.Helper()
	ctx := context.Background()
	call := protocol.NewCall(WorkerName, nil, nil, io.Discard, io.Discard, crashAt, func(int) { panic(crashed{}) })
	db, _, err := sqlitedb.Open(ctx, Options(dbPath))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			crash = true
		}
		points = call.Points.Passed()
		conn.Raw(func(any) error { return nil })
		conn.Close()
		db.Close()
	}()
	out = Run(ctx, conn, store.SQLite{}, f, Delivery{EventID: "ev-1", Number: n, NowMS: 1000}, httpSender{base: url}, call.Points)
	return out, points, false
}

func loadPattern(t *testing.T, dir string) (File, string) {
	t.Helper()
	b, err := os.ReadFile("../../testdata/patterns/jobs-then-processed.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Check(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "p.sqlite3")
	db, _, err := sqlitedb.Open(context.Background(), Options(dbPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Schema {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	return f, dbPath
}

func TestRunDeliversThenStops(t *testing.T) {
	rcv := &fakeReceiver{keys: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	f, dbPath := loadPattern(t, t.TempDir())
	out, points, _ := deliver(t, f, dbPath, srv.URL, 1, "")
	if d := cmp.Diff(f.Points(), points); d != "" {
		t.Errorf("points (-want +got):\n%s", d)
	}
	if out.Error != "" || out.Steps != 6 || out.StoppedAt != 0 || len(out.Sends) != 1 {
		t.Errorf("first delivery: %+v", out)
	}
	out, _, _ = deliver(t, f, dbPath, srv.URL, 2, "")
	if out.StoppedAt != 1 || out.Steps != 1 || len(out.Sends) != 0 {
		t.Errorf("redelivery should stop at the check: %+v", out)
	}
	if d := cmp.Diff([]string{"ev-1/notify/accepted"}, rcv.log); d != "" {
		t.Errorf("receiver log (-want +got):\n%s", d)
	}
}

// TestCrashAfterCommitDuplicates: the separate-commit pattern's known
// hole, found by the engine: a crash after the job's commit leaves no
// processed record, so the redelivery adds a second job.
func TestCrashAfterCommitDuplicates(t *testing.T) {
	rcv := &fakeReceiver{keys: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	f, dbPath := loadPattern(t, t.TempDir())
	if _, _, crash := deliver(t, f, dbPath, srv.URL, 1, "after-4-commit"); !crash {
		t.Fatal("no crash at after-4-commit")
	}
	deliver(t, f, dbPath, srv.URL, 2, "")
	db, _, err := sqlitedb.Open(context.Background(), Options(dbPath))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vals, err := QueryValues(context.Background(), store.SQLiteDB(db), f, "ev-1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]Value{"one job": IntValue(2), "processed": IntValue(1)}, vals); d != "" {
		t.Errorf("invariant values (-want +got):\n%s", d)
	}
}

func TestStepErrorIsNotACK(t *testing.T) {
	f, dbPath := loadPattern(t, t.TempDir())
	f.Handler = append(f.Handler, Step{Exec: "INSERT INTO processed_events (event_id) VALUES (:event_id)"})
	f.Handler[4] = Step{Exec: "SELECT 1"}
	out, _, _ := deliver(t, f, dbPath, "", 1, "")
	if out.FailedStep != 7 || out.ErrorClass != ClassConstraint {
		t.Errorf("a second insert of the processed record should fail step 7 as a constraint: %+v", out)
	}
}

func TestArgsRoundTrip(t *testing.T) {
	a := Args{File: "p.json", DB: "x.db", EventID: "e", Delivery: 2, Worker: 3, NowOffsetMS: 5000, Receiver: "http://h", ReadyFD: 3}
	got, err := ParseArgs(a.Argv())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := ParseArgs([]string{"-file", "p"}); err == nil {
		t.Error("missing -db accepted")
	}
}

// TestStepErrorBeforeTheCrash: a delivery armed to crash at a point past a
// step that fails (a racer whose insert of the processed record lost to
// another racer's) ends as a failed step, exit 18, not as a worker that
// never reached its crash point (exit 3), which the fold would report as
// no outcome of a delivery.
func TestStepErrorBeforeTheCrash(t *testing.T) {
	for _, tt := range []struct {
		name    string
		crashAt string
		hits    int
	}{{"at a point", "after-7-exec", 0}, {"after k hits", "", 14}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f, dbPath := loadPattern(t, dir)
			f.Handler[4] = Step{Exec: "SELECT 1"}
			f.Handler = append(f.Handler, Step{Exec: "INSERT INTO processed_events (event_id) VALUES (:event_id)"})
			f.Invariants = slices.DeleteFunc(f.Invariants, func(iv Invariant) bool { return iv.Sends != nil })
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "p.json")
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr strings.Builder
			call := protocol.NewCall(WorkerName, Args{File: file, DB: dbPath, EventID: "ev-1", Delivery: 1}.Argv(), nil, &stdout, &stderr, tt.crashAt, func(int) { t.Fatal("crashed") })
			call.Points.CrashAfterHits(tt.hits)
			if code := Main(call); code != protocol.ExitStepFailed {
				t.Errorf("exit %d, want %d (step failed)\nstdout %s\nstderr %s", code, protocol.ExitStepFailed, stdout.String(), stderr.String())
			}
		})
	}
}

// TestBeginSQL: SQLite keeps the step's lock mode; PostgreSQL, which has
// no database write lock, begins plainly at the session's isolation level.
func TestBeginSQL(t *testing.T) {
	for _, tt := range []struct {
		d    store.Dialect
		mode string
		want string
	}{
		{store.SQLite{}, "immediate", "BEGIN IMMEDIATE"},
		{store.SQLite{}, "deferred", "BEGIN DEFERRED"},
		{store.Postgres{}, "immediate", "BEGIN"},
		{store.Postgres{}, "deferred", "BEGIN"},
	} {
		if got := BeginSQL(tt.d, tt.mode); got != tt.want {
			t.Errorf("BeginSQL(%s, %s) = %q, want %q", tt.d.Name(), tt.mode, got, tt.want)
		}
	}
}

// TestAckStepPlacesTheAck: the ack step calls the delivery's Ack once,
// between its own before and after points, and the outcome names it; a
// crash before the step leaves the delivery unacknowledged, one after it
// acknowledged; without an ack step nothing is acked before the exit.
func TestAckStepPlacesTheAck(t *testing.T) {
	rcv := &fakeReceiver{keys: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	for _, tt := range []struct {
		name    string
		at      int // 1-based place of the ack step, 0 for none
		crashAt string
		acks    []string // the points passed when Ack was called
		ackedAt int
	}{
		{"first, no crash", 1, "", []string{"before-1-ack"}, 1},
		{"first, crash before it", 1, "before-1-ack", nil, 0},
		{"first, crash right after it", 1, "after-1-ack", []string{"before-1-ack"}, 1},
		{"last, crash at the commit", 7, "before-4-commit", nil, 0},
		{"none", 0, "", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, dbPath := loadPattern(t, t.TempDir())
			if tt.at > 0 {
				f.Handler = slices.Insert(f.Handler, tt.at-1, Step{Ack: true})
			}
			var stderr strings.Builder
			call := protocol.NewCall(WorkerName, nil, nil, io.Discard, &stderr, tt.crashAt, func(int) { panic(crashed{}) })
			var acks []string
			d := Delivery{EventID: "ev-1", Number: 1, NowMS: 1000, Ack: func() error {
				acks = append(acks, call.Points.Passed()...)
				return stderrAck(&stderr)()
			}}
			ctx := context.Background()
			db, _, err := sqlitedb.Open(ctx, Options(dbPath))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var out Outcome
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(crashed); !ok {
							panic(r)
						}
					}
				}()
				out = Run(ctx, conn, store.SQLite{}, f, d, httpSender{base: srv.URL}, call.Points)
			}()
			if d := cmp.Diff(tt.acks, acks); d != "" {
				t.Errorf("points passed at the ack (-want +got):\n%s", d)
			}
			if got, want := AckedOnStderr(stderr.String()), tt.acks != nil; got != want {
				t.Errorf("AckedOnStderr(%q) = %v, want %v", stderr.String(), got, want)
			}
			if tt.crashAt == "" && out.AckedAt != tt.ackedAt {
				t.Errorf("AckedAt = %d, want %d", out.AckedAt, tt.ackedAt)
			}
		})
	}
}
