package durability

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/worker/powerfs"
)

// pgSweepFlags is the sweep the tests run: the single transaction on a
// PostgreSQL power condition with everything on, under drop and torn,
// cut before and after each fsync its normal run's delivery made.
var pgSweepFlags = map[string]string{FlagKind: KindPower, FlagPattern: PatternSingle, FlagSynchronousCommits: "on",
	FlagFsync: "on", FlagFullPageWrites: "on", FlagPowerModels: powerfs.ModelDrop + "," + powerfs.ModelTorn, FlagSyncPoints: "true"}

// TestPGSyncSweep runs the fsync sweep of PostgreSQL power conditions
// on real clusters on real mounts, and reaches the verdict as verify
// does: each condition's normal run records a window of at least one
// fsync, the sweep is exactly a cut before and after each N of it, each
// cut fell at its N, every trial ends as the oracle allows, nothing is
// left mounted; and an edited N or window fails the fold naming it.
func TestPGSyncSweep(t *testing.T) {
	requirePGPower(t)
	began := time.Now()
	out := runOnServer(t, pgSweepFlags)
	noMounts(t, "a PostgreSQL sync sweep")
	if len(out.Findings) > 0 {
		t.Fatalf("a fresh run has findings: %v", out.Findings)
	}
	windows, cuts := map[string]backend.SyncWindow{}, map[string][]string{}
	normal, cut := -1, -1
	for i, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.SyncWindow != nil {
			windows[o.Condition], normal = *o.SyncWindow, i
			continue
		}
		if sc, ok := ParseSyncPoint(o.Point); ok {
			cuts[o.Condition] = append(cuts[o.Condition], o.Point)
			if c := o.PGPower.Cut.Cut; c == nil || c.Sync != sc.N {
				t.Errorf("%s %s: the logged cut is %+v", o.Condition, o.Point, c)
			}
			cut = i
		}
	}
	if len(windows) != 2 || cut < 0 {
		t.Fatalf("%d windows and no sync cut (%v): the sweep ran nothing", len(windows), cuts)
	}
	for name, w := range windows {
		if w.To <= w.From {
			t.Errorf("%s: window %+v holds no fsync of the delivery: the sweep is empty", name, w)
		}
		var want []string
		for _, c := range w.Cuts() {
			want = append(want, c.Point())
		}
		if diff := cmp.Diff(want, cuts[name]); diff != "" {
			t.Errorf("%s: the sweep of window %+v (-want +got):\n%s", name, w, diff)
		}
		t.Logf("%s: window %+v, %d cuts", name, w, len(cuts[name]))
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	t.Logf("%d conditions in %v", len(out.Result.Conditions), time.Since(began).Round(time.Millisecond))
	tampers := []struct {
		name, field string
		line        int
		edit        func(m map[string]any)
	}{
		{"window's end", "sync_window.to", normal, func(m map[string]any) {
			w := m["sync_window"].(map[string]any)
			w["to"] = w["to"].(float64) + 1
		}},
		{"window's start", "sync_window.from", normal, func(m map[string]any) {
			m["sync_window"].(map[string]any)["from"] = 0
		}},
		{"window dropped", "sync_window", normal, func(m map[string]any) { delete(m, "sync_window") }},
		{"window on a cut", "sync_window", cut, func(m map[string]any) {
			m["sync_window"] = map[string]any{"from": 1, "to": 2}
		}},
		{"cut's N", "pg_power.cut", cut, func(m map[string]any) {
			c := m["pg_power"].(map[string]any)["cut"].(map[string]any)["cut"].(map[string]any)
			c["sync"] = c["sync"].(float64) + 1
		}},
		{"trial's N", "point", cut, func(m map[string]any) {
			sc, _ := ParseSyncPoint(m["point"].(string))
			m["point"] = strings.Replace(m["point"].(string), fmt.Sprint(sc.N), fmt.Sprint(sc.N+1), 1)
		}},
	}
	for _, tt := range tampers {
		t.Run(tt.name, func(t *testing.T) {
			requireObsFinding(t, out, pgSweepFlags, tt.line, tt.field, tt.edit)
		})
	}
}

// TestSweepSentence: the report states the sweep's cuts, and names the
// conditions whose window was empty; a run that does not sweep says
// nothing of it.
func TestSweepSentence(t *testing.T) {
	on := Condition{Name: "a", Pattern: PatternSingle, SynchronousCommit: "on", Kind: KindPower, Fsync: "on", FullPageWrites: "on", Model: powerfs.ModelDrop}
	off := on
	off.Name, off.Fsync = "b", "off"
	cells := []cell{{cond: on, point: PointACK}, {cond: on, point: "sync-13-before"}, {cond: on, point: "sync-13-after"}, {cond: off, point: PointACK}}
	tests := []struct {
		name string
		st   Settings
		want string
	}{
		{"one empty", Settings{SyncPoints: true, Conditions: []Condition{on, off}},
			"The fsync sweep made 2 cuts at the power-loss mount's fsyncs over 2 conditions; in 1 of them the normal run's delivery made no fsync on the mount (fsync off, or commits that flush nothing), so their sweep is empty: b."},
		{"none empty", Settings{SyncPoints: true, Conditions: []Condition{on}}, "The fsync sweep made 2 cuts at the power-loss mount's fsyncs over 1 conditions."},
		{"no sweep", Settings{Conditions: []Condition{on, off}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := sweepSentence(tt.st, cells)
			if diff := cmp.Diff(tt.want, s.Text); diff != "" {
				t.Errorf("sentence (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncBound: --sync-bound cuts a long window short to its first N
// fsyncs, in the plan the run and verify both make (Order); a PostgreSQL
// kill condition is never swept.
func TestSyncBound(t *testing.T) {
	power := Condition{Name: "p", Pattern: PatternSingle, SynchronousCommit: "on", Kind: KindPower, Fsync: "on", FullPageWrites: "on", Model: powerfs.ModelDrop}
	kill := Condition{Name: "k", Pattern: PatternSingle, SynchronousCommit: "on", Kind: KindKill}
	w := backend.SyncWindow{From: 12, To: 15}
	tests := []struct {
		name  string
		bound int
		c     Condition
		want  []string
	}{
		{"whole window", 0, power, []string{"sync-13-before", "sync-13-after", "sync-14-before", "sync-14-after", "sync-15-before", "sync-15-after"}},
		{"first fsync", 1, power, []string{"sync-13-before", "sync-13-after"}},
		{"bound past the window", 5, power, []string{"sync-13-before", "sync-13-after", "sync-14-before", "sync-14-after", "sync-15-before", "sync-15-after"}},
		{"a kill is not swept", 0, kill, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Settings{SyncPoints: true, SyncBound: tt.bound, Items: 1}
			var got []string
			for _, tr := range st.Order(tt.c, nil, w) {
				if _, ok := ParseSyncPoint(tr.Point); ok {
					got = append(got, tr.Point)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sync cuts (-want +got):\n%s", diff)
			}
		})
	}
}
