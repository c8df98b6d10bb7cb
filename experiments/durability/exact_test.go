package durability

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/engine"
	"idemlab/experiments/syncmodel"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	wr "idemlab/worker/redelivery"
)

func power(mode, sync string, excl bool) Setting {
	return Setting{JournalMode: mode, Synchronous: sync, Kind: KindPower, Exclusive: excl}
}

// TestWantOf checks the exact oracle on the cells the matrix is known for.
func TestWantOf(t *testing.T) {
	item1 := wb.ItemPoint(wb.PointAfterSendAccepted, wb.ItemID(1))
	tests := []struct {
		pattern, point string
		s              Setting
		want           Want
	}{
		{PatternSingle, PointACK, power("DELETE", "NORMAL", false), Want{TagLostAcked, 2, []string{"events.sqlite3-journal:resurrected"}, nil}},
		{PatternSingle, wr.PointAfterCommit, power("DELETE", "FULL", false), Want{TagRolledBack, 2, []string{"events.sqlite3-journal:resurrected"}, nil}},
		{PatternSingle, wr.PointBeforeCommit, power("DELETE", "FULL", false), Want{OutcomeOK, 0, []string{"events.sqlite3-journal:removed"}, nil}},
		{PatternSingle, wr.PointAfterCommit, power("WAL", "NORMAL", false), Want{TagRolledBack, 2, []string{}, nil}},
		{PatternSingle, PointACK, power("WAL", "NORMAL", false), Want{OutcomeOK, 0, []string{"events.sqlite3-wal:resurrected"}, nil}},
		{PatternSingle, PointACKOpen, power("WAL", "NORMAL", false), Want{TagLostAcked, 2, []string{}, nil}},
		{PatternSeparate, PointACKReader, power("WAL", "NORMAL", false), Want{TagLostAcked, 2, []string{}, nil}},
		{PatternSeparate, PointACKReader, power("WAL", "FULL", false), Want{OutcomeOK, 0, []string{}, nil}},
		{PatternSeparate, PointACK, power("DELETE", "FULL", false), Want{"lost-acked+duplicate", 1, []string{"events.sqlite3-journal:resurrected"}, nil}},
		{PatternSeparate, PointACK, power("DELETE", "EXTRA", false), Want{OutcomeOK, 0, []string{}, nil}},
		{PatternSeparate, wr.PointAfterJobCommit, Setting{JournalMode: "DELETE", Synchronous: "FULL", Kind: KindKill}, Want{TagDuplicate, 0, []string{}, nil}},
		{PatternBatch, PointACK, power("DELETE", "FULL", true), Want{OutcomeOK, 0, []string{"journal.sqlite3-journal:resurrected"}, nil}},
		{PatternBatch, PointACKOpen, power("WAL", "NORMAL", true), Want{"lost-acked+duplicate", 6, []string{}, nil}},
		{PatternBatch, item1, power("WAL", "NORMAL", true), Want{"rolled-back+duplicate", 3, []string{}, nil}},
		{PatternClaim, PointACK, power("DELETE", "FULL", false), Want{"lost-acked+lost-downstream", 1, []string{"claims.sqlite3-journal:resurrected"}, nil}},
		{PatternClaim, we.PointClaimed, power("DELETE", "FULL", false), Want{"rolled-back+lost-claim+duplicate", 1, []string{"claims.sqlite3-journal:resurrected"}, nil}},
		{PatternClaim, we.PointClaimFollowUp, power("WAL", "NORMAL", false), Want{"rolled-back+lost-claim+lost-downstream+duplicate", 1, []string{}, nil}},
		{PatternClaim, PointACK, power("WAL", "OFF", false), Want{"lost-acked+lost-claim+lost-downstream+duplicate", 1, []string{}, nil}},
		// Inside the second commit, before its journal's first sync, the
		// first journal's name is still the durable one: the name stays, on
		// the first journal's inode ("restored", not listed), which rolls
		// the first commit back too. Under EXTRA the new journal's name
		// goes, the first commit stands, and the redelivery duplicates.
		{PatternSeparate, "sync-4-before", power("DELETE", "FULL", false), Want{TagRolledBack, 1, []string{}, nil}},
		{PatternSeparate, "sync-4-before", power("DELETE", "EXTRA", false), Want{TagDuplicate, 0, []string{"events.sqlite3-journal:removed"}, nil}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %s/%s/%s", tt.pattern, tt.point, tt.s.JournalMode, tt.s.Synchronous, tt.s.Kind), func(t *testing.T) {
			got, err := WantOf(tt.pattern, tt.s, 2, tt.point, faultvfs.FaultDrop)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("WantOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTornWants: under the torn mode the oracle gives a set per view of
// the files the seed decided, and the all-dropped view is the drop mode's
// exact outcome.
func TestTornWants(t *testing.T) {
	got, err := WantOf(PatternSingle, power("WAL", "NORMAL", false), 2, PointACKOpen, faultvfs.FaultTorn)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"events.sqlite3-wal=d": {TagLostAcked},
		"events.sqlite3-wal=k": {OutcomeOK},
		"events.sqlite3-wal=t": {OutcomeOK, TagLostAcked},
	}
	if diff := cmp.Diff(want, got.Torn); diff != "" {
		t.Errorf("torn wants (-want +got):\n%s", diff)
	}
	off, err := WantOf(PatternSingle, power("DELETE", "OFF", false), 2, PointACK, faultvfs.FaultTorn)
	if err != nil {
		t.Fatal(err)
	}
	if a := off.Torn["events.sqlite3=t"]; !slices.Contains(a, AnyOutcome) {
		t.Errorf("OFF with a torn database allows %v; corruption is possible there", a)
	}
	full, err := WantOf(PatternSingle, power("DELETE", "FULL", false), 2, "sync-3-before", faultvfs.FaultTorn)
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range full.Torn {
		if slices.Contains(a, AnyOutcome) {
			t.Errorf("FULL, view %q allows corruption: %v", k, a)
		}
	}
}

// TestWantOfEverywhere runs the oracle over every pattern, setting, kind
// and point, sync points included, under both fault modes: it must answer
// everywhere, never find more commits after a power cut than before, and
// under the torn mode its all-dropped view must be the drop mode's answer.
func TestWantOfEverywhere(t *testing.T) {
	lossy := 0
	for _, p := range AllPatterns {
		for _, mode := range []string{"DELETE", "WAL"} {
			for _, sync := range []string{"OFF", "NORMAL", "FULL", "EXTRA"} {
				s := power(mode, sync, p == PatternBatch)
				n, err := syncmodel.Syncs(ModelSetting(s), syncmodel.Process{Commits: TotalCommits(p, 2), End: syncmodel.EndClose})
				if err != nil {
					t.Fatal(err)
				}
				points := append([]string{PointACK, PointACKOpen}, Points(p, 2)...)
				if p != PatternBatch {
					points = append(points, PointACKReader)
				}
				for _, pt := range append(points, syncPoints(n)...) {
					// What the cut leaves, against what the first
					// process committed before it.
					pl, err := place(p, s, 2, pt)
					if err != nil {
						t.Fatalf("%s %s/%s %s: %v", p, mode, sync, pt, err)
					}
					if pl.cut == nil || pl.cut.Min > pl.made || pl.cut.Max > pl.made || pl.cut.Min > pl.cut.Max {
						t.Errorf("%s %s/%s %s: %d commits made, the cut leaves %+v: more than before, or no cut", p, mode, sync, pt, pl.made, pl.cut)
					} else if pl.cut.Min < pl.made {
						lossy++
					}
					drop, err := WantOf(p, s, 2, pt, faultvfs.FaultDrop)
					if err != nil {
						t.Fatalf("%s %s/%s %s: %v", p, mode, sync, pt, err)
					}
					torn, err := WantOf(p, s, 2, pt, faultvfs.FaultTorn)
					if err != nil {
						t.Fatalf("%s %s/%s %s torn: %v", p, mode, sync, pt, err)
					}
					key := ""
					for k := range torn.Torn {
						if len(k) > 0 && k[len(k)-1] == 'd' && !containsLetter(k, 'k', 't') || k == "" {
							key = k
						}
					}
					if a, ok := torn.Torn[key]; !ok || !slices.Contains(a, drop.Outcome) {
						t.Errorf("%s %s/%s %s: torn %v lacks the drop outcome %q under %q", p, mode, sync, pt, torn.Torn, drop.Outcome, key)
					}
				}
			}
		}
	}
	// The check above is not vacuous: some cut loses commits.
	if lossy == 0 {
		t.Error("no power cut anywhere loses a commit")
	}
}

// containsLetter reports whether a view key has a file in any of the
// given views.
func containsLetter(key string, letters ...byte) bool {
	for i := 1; i < len(key); i++ {
		if key[i-1] == '=' && slices.Contains(letters, key[i]) {
			return true
		}
	}
	return false
}

// syncPoints are the engine's sync points of a first process that synced
// n times: before and after each.
func syncPoints(n int) []string {
	var out []string
	for _, c := range (engine.Sweep{First: PointACK, SyncPoints: true}).Cuts(engine.Found{Syncs: n})[1:] {
		out = append(out, c.Point)
	}
	return out
}
