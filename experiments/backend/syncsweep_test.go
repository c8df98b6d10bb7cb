package backend

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/powerfs"
)

// TestSyncWindow: a window's cuts are a before and an after for each N
// past From up to To, and a window no start could give is refused.
func TestSyncWindow(t *testing.T) {
	on := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}
	noFsync := PowerSettings{Fsync: "off", SynchronousCommit: "on", FullPageWrites: "on"}
	tests := []struct {
		name    string
		w       SyncWindow
		s       PowerSettings
		want    []string
		wantErr bool
	}{
		{"two fsyncs", SyncWindow{From: 4, To: 6}, on, []string{"sync-5-before", "sync-5-after", "sync-6-before", "sync-6-after"}, false},
		{"none", SyncWindow{From: 4, To: 4}, on, nil, false},
		{"no start", SyncWindow{From: 0, To: 2}, on, []string{"sync-1-before", "sync-1-after", "sync-2-before", "sync-2-after"}, true},
		{"backwards", SyncWindow{From: 5, To: 4}, on, nil, true},
		{"fsync off: nothing synced", SyncWindow{}, noFsync, nil, false},
		{"fsync off, but fsyncs counted", SyncWindow{From: 0, To: 2}, noFsync, []string{"sync-1-before", "sync-1-after", "sync-2-before", "sync-2-after"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range tt.w.Cuts() {
				got = append(got, c.Point())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cuts (-want +got):\n%s", diff)
			}
			if err := tt.w.Check(tt.s); (err != nil) != tt.wantErr {
				t.Errorf("Check() = %v, want an error %v", err, tt.wantErr)
			}
		})
	}
}

// TestSweepWant: the oracle of a cut inside a delivery, from the
// settings alone, against outcomes made up to sit on each side of it.
func TestSweepWant(t *testing.T) {
	on := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}
	async := PowerSettings{Fsync: "on", SynchronousCommit: "off", FullPageWrites: "on"}
	noFPW := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "off"}
	noFsync := PowerSettings{Fsync: "off", SynchronousCommit: "on", FullPageWrites: "on"}
	rows := func(r ...string) PowerOutcome { return PowerOutcome{Started: true, Rows: r} }
	damaged := PowerOutcome{Started: true, Rows: []string{"1"}, ChecksumFailures: 1}
	acked, maybe := []string{"1"}, []string{"2"}
	tests := []struct {
		name  string
		s     PowerSettings
		model string
		o     PowerOutcome
		bad   bool
	}{
		{"on: acked kept", on, powerfs.ModelDrop, rows("1"), false},
		{"on: the unACKed one kept too", on, powerfs.ModelKeep, rows("1", "2"), false},
		{"on: an ACKed row lost", on, powerfs.ModelDrop, rows(), true},
		{"on: a row never written", on, powerfs.ModelTorn, rows("1", "3"), true},
		{"on: no start", on, powerfs.ModelDrop, PowerOutcome{}, true},
		{"on: damaged", on, powerfs.ModelTorn, damaged, true},
		{"on: torn lost an ACKed row, no WAL rewrite garbled", on, powerfs.ModelTorn, PowerOutcome{Started: true, Cut: powerfs.Outcome{Files: []powerfs.File{
			{Path: "pg_wal/000000010000000000000001", Decisions: "kdkk", Undo: []powerfs.Undo{{}}}}}}, true},
		{"on: torn lost an ACKed row, a WAL rewrite garbled", on, powerfs.ModelTorn, PowerOutcome{Started: true, Cut: powerfs.Outcome{Files: []powerfs.File{
			{Path: "pg_wal/000000010000000000000001", Decisions: "kgkk", Undo: []powerfs.Undo{{}}}}}}, false},
		{"on: drop lost an ACKed row beside a garbled WAL rewrite", on, powerfs.ModelDrop, PowerOutcome{Started: true, Cut: powerfs.Outcome{Files: []powerfs.File{
			{Path: "pg_wal/000000010000000000000001", Decisions: "kgkk", Undo: []powerfs.Undo{{}}}}}}, true},
		{"on: torn garbled a table's rewrite, not the WAL", on, powerfs.ModelTorn, PowerOutcome{Started: true, Cut: powerfs.Outcome{Files: []powerfs.File{
			{Path: "base/5/16384", Decisions: "kgkk", Undo: []powerfs.Undo{{}}}}}}, true},
		{"synchronous_commit off: an ACKed row lost", async, powerfs.ModelDrop, rows(), false},
		{"synchronous_commit off: no start", async, powerfs.ModelDrop, PowerOutcome{}, true},
		{"full_page_writes off: damaged under torn", noFPW, powerfs.ModelTorn, damaged, false},
		{"full_page_writes off: damaged under drop", noFPW, powerfs.ModelDrop, damaged, true},
		{"fsync off: no start", noFsync, powerfs.ModelDrop, PowerOutcome{}, false},
		{"fsync off: anything", noFsync, powerfs.ModelTorn, rows("7"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SweepWantOf(tt.s, tt.model).Judge(tt.o, acked, maybe)
			if (len(got) > 0) != tt.bad {
				t.Errorf("Judge = %q, want a violation %v", got, tt.bad)
			}
		})
	}
}

// TestPowerSyncSweep sweeps a delivery of three autocommit inserts on
// real clusters on real mounts: a discovery trial counts the mount's
// fsyncs from Setup's end to the last ACK (the window), then each model
// cuts just before and just after every fsync of it. Each cut must fall
// at its N (the logged cut op), and what the recovered server holds must
// be what PostgreSQL's guarantees for the settings allow (SweepWantOf):
// with fsync and synchronous_commit on, no ACKed row lost, no row that
// was never sent, nothing damaged. It logs the window and the sweep's
// cost, the figures BENCHMARKS.md quotes.
func TestPowerSyncSweep(t *testing.T) {
	needPower(t)
	const n = 3
	s := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}
	began := time.Now()
	_, before, _, disc := syncTrial(t, PowerConfig{Settings: s, Params: powerfs.Params{Model: powerfs.ModelKeep}}, n)
	w := SyncWindow{From: before[0], To: disc.Cut.Syncs}
	if err := w.Check(s); err != nil {
		t.Fatalf("the discovery's window: %v", err)
	}
	if w.To == w.From {
		t.Fatalf("the discovery counted no fsync in a delivery of %d synchronous commits (window %+v): the sweep would be empty", n, w)
	}
	t.Logf("discovery: %v; window %+v: %d fsyncs in the delivery of %d commits, %d cuts per model",
		time.Since(began).Round(time.Millisecond), w, w.To-w.From, n, len(w.Cuts()))
	table := []string{"model  cut  acked  rows  verdict"}
	trials, garbled, lostGarbled := 0, 0, 0
	sweepBegan := time.Now()
	for _, model := range []string{powerfs.ModelDrop, powerfs.ModelKeep, powerfs.ModelTorn} {
		for _, c := range w.Cuts() {
			t.Run(model+"/"+c.Point(), func(t *testing.T) {
				p := powerfs.Params{Model: model}
				if model == powerfs.ModelTorn {
					p = CutParams(model, int64(c.N)*2+map[bool]int64{false: 0, true: 1}[c.After], 0)
				}
				acked, _, froze, o := syncTrial(t, PowerConfig{Settings: s, Params: p, CutSync: c.N, CutAfter: c.After}, n)
				trials++
				at := map[bool]string{false: "before", true: "after"}[c.After]
				if cut := o.Cut.Cut; !froze || cut == nil || cut.Sync != c.N || cut.At != at {
					t.Fatalf("the mount did not freeze %s fsync %d: froze=%v, logged cut %+v", at, c.N, froze, cut)
				}
				bad := SweepWantOf(s, model).Judge(o, acked, sentNotACKed(acked, n))
				table = append(table, fmt.Sprintf("%s  %s  %v  %v  garbled WAL rewrite %v  %v", model, c.Point(), acked, o.Rows, GarbledWALRewrite(o.Cut), bad))
				if GarbledWALRewrite(o.Cut) {
					garbled++
					if !slices.Equal(o.Rows[:min(len(o.Rows), len(acked))], acked) {
						lostGarbled++
					}
				}
				if len(bad) > 0 {
					t.Errorf("%s %s: %s", model, c.Point(), strings.Join(bad, "; "))
				}
			})
		}
	}
	t.Logf("the sweep: %d trials in %v (%v a trial); %d torn cuts garbled a rewritten WAL page, %d of them lost ACKed rows\n%s", trials, time.Since(sweepBegan).Round(time.Millisecond),
		(time.Since(sweepBegan) / time.Duration(max(trials, 1))).Round(time.Millisecond), garbled, lostGarbled, strings.Join(table, "\n"))
}

// sentNotACKed is the insert a sync cut froze: the one after the ACKed
// ones, if any of the n was left.
func sentNotACKed(acked []string, n int) []string {
	if len(acked) >= n {
		return nil
	}
	next := fmt.Sprint(len(acked) + 1)
	if slices.Contains(acked, next) {
		return nil
	}
	return []string{next}
}
