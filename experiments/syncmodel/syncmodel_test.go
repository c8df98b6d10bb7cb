package syncmodel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func set(mode, sync string, excl bool) Setting {
	return Setting{JournalMode: mode, Synchronous: sync, Exclusive: excl}
}

var (
	closed2 = Process{Commits: 2, End: EndClose}
	open2   = Process{Commits: 2, End: EndOpen}
)

// TestSyncs: the sync counts of two commits and a close, one per setting.
// They agree with what faultvfs logged for real processes (see
// TestScheduleMatchesSQLite in experiments/durability).
func TestSyncs(t *testing.T) {
	tests := []struct {
		s    Setting
		p    Process
		want int
	}{
		{set("DELETE", "OFF", false), closed2, 0},
		{set("DELETE", "NORMAL", false), closed2, 4}, // journal, database
		{set("DELETE", "FULL", false), closed2, 6},   // journal twice, database
		{set("DELETE", "EXTRA", false), closed2, 6},  // the directory sync is xDelete's
		{set("DELETE", "NORMAL", true), closed2, 7},  // journal, database, zeroed header; close
		{set("DELETE", "FULL", true), closed2, 9},    // journal twice, database, header; close
		{set("WAL", "OFF", false), closed2, 0},       // never
		{set("WAL", "NORMAL", false), closed2, 3},    // WAL header; the close's checkpoint syncs WAL and database
		{set("WAL", "FULL", false), closed2, 5},      // header, each commit, checkpoint
		{set("WAL", "NORMAL", false), open2, 1},      // the header only
		{set("WAL", "NORMAL", false), Process{Commits: 2, End: EndReader}, 1},
		{set("WAL", "FULL", true), open2, 3},
		{set("DELETE", "FULL", false), Process{Commits: 1, InTx: true, End: EndOpen}, 3}, // the second has not committed
		{set("WAL", "NORMAL", false), Process{End: EndClose}, 0},                         // no frame, no checkpoint
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v %+v", tt.s, tt.p), func(t *testing.T) {
			got, err := Syncs(tt.s, tt.p)
			if err != nil || got != tt.want {
				t.Errorf("Syncs = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// outcome is a Result in one line, for the tables.
func outcome(r Result) string {
	s := fmt.Sprint(r.Min)
	if r.Max != r.Min {
		s += fmt.Sprintf("..%d", r.Max)
	}
	if r.RolledBack {
		s += " rollback"
	}
	if r.MayCorrupt {
		s += " corrupt?"
	}
	if len(r.Resurrected) > 0 {
		s += " back:" + strings.Join(r.Resurrected, ",")
	}
	if len(r.Removed) > 0 {
		s += " gone:" + strings.Join(r.Removed, ",")
	}
	return s
}

// TestPowerCutAfterTheProcess: the drop model after the process ended, the
// findings the durability matrix reports.
func TestPowerCutAfterTheProcess(t *testing.T) {
	tests := []struct {
		name string
		s    Setting
		p    Process
		want string
	}{
		{"OFF syncs nothing", set("DELETE", "OFF", false), closed2, "0"},
		{"DELETE NORMAL: the last journal comes back hot", set("DELETE", "NORMAL", false), closed2, "1 rollback back:-journal"},
		{"DELETE FULL: the same", set("DELETE", "FULL", false), closed2, "1 rollback back:-journal"},
		{"DELETE EXTRA: the deletion is durable", set("DELETE", "EXTRA", false), closed2, "2"},
		{"exclusive DELETE FULL: the journal comes back zeroed", set("DELETE", "FULL", true), closed2, "2 back:-journal"},
		{"exclusive DELETE OFF", set("DELETE", "OFF", true), closed2, "0"},
		{"WAL OFF: nothing synced, the WAL never named", set("WAL", "OFF", false), closed2, "0"},
		{"WAL NORMAL closed: the checkpoint synced it all", set("WAL", "NORMAL", false), closed2, "2 back:-wal"},
		{"WAL NORMAL open: only the header was synced", set("WAL", "NORMAL", false), open2, "0"},
		{"WAL NORMAL with a reader: no checkpoint", set("WAL", "NORMAL", false), Process{Commits: 2, End: EndReader}, "0"},
		{"WAL FULL open: each commit synced", set("WAL", "FULL", false), open2, "2"},
		{"exclusive WAL NORMAL open", set("WAL", "NORMAL", true), open2, "0"},
		{"exclusive WAL NORMAL closed", set("WAL", "NORMAL", true), closed2, "2 back:-wal"},
		{"DELETE inside a transaction: the new journal never named", set("DELETE", "FULL", false), Process{Commits: 0, InTx: true, End: EndOpen}, "0 gone:-journal"},
		{"DELETE inside the second: the first journal's name comes back", set("DELETE", "FULL", false), Process{Commits: 1, InTx: true, End: EndOpen}, "0 rollback"},
		{"EXTRA inside the second", set("DELETE", "EXTRA", false), Process{Commits: 1, InTx: true, End: EndOpen}, "1 gone:-journal"},
		{"WAL before any commit: the new WAL never named", set("WAL", "FULL", false), Process{End: EndOpen}, "0 gone:-wal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := PowerCut(tt.s, tt.p, Cut{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcome(r); got != tt.want {
				t.Errorf("PowerCut = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCutsInsideCommits sweeps DELETE FULL and WAL NORMAL over every sync
// of two commits and a close, by a power cut and by a kill.
func TestCutsInsideCommits(t *testing.T) {
	tests := []struct {
		s           Setting
		power, kill []string // per sync: before, after
	}{
		{
			s: set("DELETE", "FULL", false),
			// 1, 2: commit 1's journal syncs; 3 its database sync; 4-6
			// commit 2's. Before sync 4 the durable name is still the
			// first journal's, which comes back and takes commit 1 too.
			power: []string{"0 gone:-journal", "0 rollback", "0 rollback", "0 rollback", "0 rollback", "0 rollback",
				"0 rollback", "1 rollback", "1 rollback", "1 rollback", "1 rollback", "1 rollback"},
			kill: []string{"0 rollback", "0 rollback", "0 rollback", "0 rollback", "0 rollback", "0 rollback",
				"1 rollback", "1 rollback", "1 rollback", "1 rollback", "1 rollback", "1 rollback"},
		},
		{
			s: set("WAL", "NORMAL", false),
			// 1: the WAL header; 2, 3: the close's checkpoint.
			power: []string{"0 gone:-wal", "0", "0", "2", "2", "2"},
			kill:  []string{"0", "0", "2", "2", "2", "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.s.JournalMode+" "+tt.s.Synchronous, func(t *testing.T) {
			var power, kill []string
			n, _ := Syncs(tt.s, closed2)
			for i := 1; i <= n; i++ {
				for _, after := range []bool{false, true} {
					c := Cut{Sync: i, After: after}
					p, err := PowerCut(tt.s, closed2, c, nil)
					if err != nil {
						t.Fatal(err)
					}
					k, err := Kill(tt.s, closed2, c)
					if err != nil {
						t.Fatal(err)
					}
					power, kill = append(power, outcome(p)), append(kill, outcome(k))
				}
			}
			if diff := cmp.Diff(tt.power, power); diff != "" {
				t.Errorf("power cuts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kill, kill); diff != "" {
				t.Errorf("kills (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := PowerCut(set("WAL", "NORMAL", false), closed2, Cut{Sync: 4}, nil); err == nil {
		t.Error("a cut at sync 4 of 3 was accepted")
	}
}

// TestTornViews: a torn file leaves a range between its synced and live
// content; a torn database no journal or WAL repairs may be corrupt.
func TestTornViews(t *testing.T) {
	tests := []struct {
		name  string
		s     Setting
		p     Process
		c     Cut
		views Views
		want  string
	}{
		{"WAL NORMAL open, torn WAL: any prefix", set("WAL", "NORMAL", false), open2, Cut{}, Views{FileWAL: ViewTorn}, "0..2"},
		{"WAL NORMAL open, WAL kept: the kill's outcome", set("WAL", "NORMAL", false), open2, Cut{}, Views{FileWAL: ViewKeep}, "2"},
		{"OFF, torn database: corrupt may follow", set("DELETE", "OFF", false), closed2, Cut{}, Views{FileDB: ViewTorn}, "0..2 corrupt?"},
		{"FULL before the database sync: the hot journal repairs it", set("DELETE", "FULL", false), closed2, Cut{Sync: 3}, Views{FileDB: ViewTorn}, "0 rollback"},
		{"WAL NORMAL before the checkpoint's database sync: the WAL repairs it", set("WAL", "NORMAL", false), closed2, Cut{Sync: 3}, Views{FileDB: ViewTorn}, "2"},
		{"WAL OFF closed, torn database and no WAL left", set("WAL", "OFF", false), closed2, Cut{}, Views{FileDB: ViewTorn}, "0..2 corrupt?"},
		{"exclusive NORMAL before the journal's sync: zeroed or hot, nothing lost", set("DELETE", "NORMAL", true), closed2, Cut{Sync: 4}, Views{FileJournal: ViewTorn}, "1 rollback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := PowerCut(tt.s, tt.p, tt.c, tt.views)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcome(r); got != tt.want {
				t.Errorf("PowerCut = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		s    Setting
		p    Process
		want string
	}{
		{set("TRUNCATE", "FULL", false), closed2, "journal_mode"},
		{set("WAL", "SOMETIMES", false), closed2, "synchronous"},
		{set("WAL", "FULL", false), Process{Commits: 1, InTx: true, End: EndClose}, "inside a transaction"},
		{set("WAL", "FULL", true), Process{Commits: 1, End: EndReader}, "EXCLUSIVE"},
		{set("WAL", "FULL", false), Process{Commits: -1, End: EndClose}, "commits"},
	}
	for _, tt := range tests {
		if _, err := Schedule(tt.s, tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Schedule(%+v, %+v) = %v, want an error about %s", tt.s, tt.p, err, tt.want)
		}
	}
}

// TestDirty: the files a torn cut decides are those written since their
// last sync that keep their inode through the cut.
func TestDirty(t *testing.T) {
	tests := []struct {
		s    Setting
		p    Process
		c    Cut
		want []string
	}{
		{set("WAL", "NORMAL", false), open2, Cut{}, []string{FileWAL}},
		{set("WAL", "NORMAL", false), closed2, Cut{}, nil},
		{set("DELETE", "FULL", false), closed2, Cut{Sync: 2}, []string{FileJournal}}, // the record count
		{set("DELETE", "FULL", false), closed2, Cut{Sync: 3}, []string{FileDB}},
		{set("DELETE", "FULL", false), closed2, Cut{Sync: 1}, nil}, // the new journal is not named yet
		{set("DELETE", "OFF", false), closed2, Cut{}, []string{FileDB}},
		{set("DELETE", "NORMAL", true), open2, Cut{}, nil},
		{set("DELETE", "NORMAL", true), Process{Commits: 1, InTx: true, End: EndOpen}, Cut{}, []string{FileJournal}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v %+v %+v", tt.s, tt.p, tt.c), func(t *testing.T) {
			got, err := Dirty(tt.s, tt.p, tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Dirty (-want +got):\n%s", diff)
			}
		})
	}
}
