package backend

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// TestCheckSweepInput: sync_points only with the power kind, sync_bound
// only with sync_points and within 1..MaxSyncBound; each refusal names
// the field as the user set it.
func TestCheckSweepInput(t *testing.T) {
	name := func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") }
	tests := []struct {
		name          string
		power, points bool
		bound         int
		wantField     string // "" for no error
	}{
		{"sweep on a power run", true, true, 0, ""},
		{"bounded sweep", true, true, MaxSyncBound, ""},
		{"no sweep", false, false, 0, ""},
		{"sweep without power", false, true, 0, "--sync-points"},
		{"bound without power", false, false, 3, "--sync-bound"},
		{"bound without sweep", true, false, 3, "--sync-bound"},
		{"bound past the largest", true, true, MaxSyncBound + 1, "--sync-bound"},
		{"negative bound", true, true, -1, "--sync-bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSweepInput(tt.power, tt.points, tt.bound, "power", name)
			if (err != nil) != (tt.wantField != "") || err != nil && !strings.HasPrefix(err.Error(), tt.wantField+":") {
				t.Errorf("err = %v, want one naming %q", err, tt.wantField)
			}
		})
	}
}

// TestBounded: a bound keeps the first n fsyncs of a window, the cuts the
// window gives then stop at From+n; 0 keeps it whole.
func TestBounded(t *testing.T) {
	w := SyncWindow{From: 3, To: 9}
	for _, n := range []int{0, 1, 5, w.To - w.From, w.To - w.From + 4} {
		last := w.To
		if n > 0 && w.From+n < last {
			last = w.From + n
		}
		cuts := w.Bounded(n).Cuts()
		if len(cuts) != 2*(last-w.From) || len(cuts) > 0 && cuts[len(cuts)-1].N != last {
			t.Errorf("bound %d: cuts %v, want a before and an after for each of %d..%d", n, cuts, w.From+1, last)
		}
	}
}

// TestCheckSweepRecord: the window only on the discovery of a sweeping
// condition, and equal there to the cut's count; a sweep trial's logged
// cut at its own fsync; each field named as the record names it.
func TestCheckSweepRecord(t *testing.T) {
	on := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}
	w := &SyncWindow{From: 4, To: 6}
	cutAt := func(n int, at string) *PowerOutcome {
		return &PowerOutcome{Cut: powerfs.Outcome{Syncs: n, Cut: &powerfs.Op{Kind: powerfs.OpCut, Sync: n, At: at}}}
	}
	after := &PowerOutcome{Cut: powerfs.Outcome{Syncs: w.To}}
	sc := &protocol.SyncCut{N: 5, After: true}
	tests := []struct {
		name      string
		w         *SyncWindow
		discovery bool
		o         *PowerOutcome
		sc        *protocol.SyncCut
		want      string
	}{
		{"discovery with its window", w, true, after, nil, ""},
		{"discovery without a window", nil, true, after, nil, "sync_window"},
		{"window on a sweep trial", w, false, cutAt(5, "after"), sc, "sync_window"},
		{"window past the cut's count", &SyncWindow{From: 4, To: 7}, true, after, nil, "sync_window.to"},
		{"window with no start", &SyncWindow{To: 6}, true, after, nil, "sync_window.from"},
		{"sweep trial at its fsync", nil, false, cutAt(5, "after"), sc, ""},
		{"sweep trial before its fsync", nil, false, cutAt(5, "before"), sc, "pg_power.cut.cut"},
		{"sweep trial at another fsync", nil, false, cutAt(6, "after"), sc, "pg_power.cut.cut"},
		{"no cut recorded", nil, false, nil, sc, ""},
		{"a trial that sweeps nothing", nil, false, after, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, text := CheckSweepRecord(tt.w, tt.discovery, tt.o, on, tt.sc)
			if field != tt.want || (field == "") != (text == "") {
				t.Errorf("field %q (%s), want %q", field, text, tt.want)
			}
		})
	}
}

// TestSweepSentenceCounts: the sentence sums the conditions' cuts and names
// the ones whose sweep was empty; nothing swept says nothing.
func TestSweepSentenceCounts(t *testing.T) {
	if s, ok := SweepSentence(nil); ok || s != "" {
		t.Errorf("nothing swept: %q, %v; want no sentence", s, ok)
	}
	conds := []SweptCondition{{"a", 4}, {"b", 0}, {"c", 6}}
	s, ok := SweepSentence(conds)
	total := 0
	var empty []string
	for _, c := range conds {
		if total += c.Cuts; c.Cuts == 0 {
			empty = append(empty, c.Name)
		}
	}
	var got []string
	for _, c := range conds {
		if strings.Contains(s, ": "+c.Name) || strings.Contains(s, ", "+c.Name) {
			got = append(got, c.Name)
		}
	}
	if !ok || !strings.Contains(s, " made "+strconv.Itoa(total)+" cuts ") || !strings.Contains(s, "over "+strconv.Itoa(len(conds))+" conditions") {
		t.Errorf("sentence %q, want %d cuts over %d conditions", s, total, len(conds))
	}
	if d := cmp.Diff(empty, got); d != "" {
		t.Errorf("empty sweeps named (-want +got):\n%s", d)
	}
}
