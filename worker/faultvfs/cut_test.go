package faultvfs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
)

// TestSyncCut stops a real child inside its N-th sync, before and after the
// fsync, and checks the report and the log: a cut before sync N leaves N-1
// syncs logged, a cut after it N, and a cut past the last sync is a worker
// error, as for any chosen point never reached. Two commits under DELETE
// FULL sync six times (journal, journal header, database, twice); under
// WAL FULL three times (WAL header, then each commit).
func TestSyncCut(t *testing.T) {
	tests := []struct {
		journal  string
		cut      protocol.SyncCut
		wantExit int
	}{
		{"DELETE", protocol.SyncCut{N: 1}, protocol.ExitCrash},
		{"DELETE", protocol.SyncCut{N: 3, After: true}, protocol.ExitCrash},
		{"DELETE", protocol.SyncCut{N: 6}, protocol.ExitCrash},
		{"DELETE", protocol.SyncCut{N: 6, After: true}, protocol.ExitCrash},
		{"DELETE", protocol.SyncCut{N: 7}, protocol.ExitWorkerError},
		{"WAL", protocol.SyncCut{N: 2}, protocol.ExitCrash},
		{"WAL", protocol.SyncCut{N: 3, After: true}, protocol.ExitCrash},
		{"WAL", protocol.SyncCut{N: 4}, protocol.ExitWorkerError},
	}
	for _, tt := range tests {
		t.Run(tt.journal+" "+tt.cut.String(), func(t *testing.T) {
			path := newDB(t, tt.journal)
			code, rep := runChild(t, path, tt.journal, "FULL", 2, protocol.EnvCutAtSync+"="+tt.cut.String())
			if code != tt.wantExit {
				t.Fatalf("child exit %d, want %d; report %+v", code, tt.wantExit, rep)
			}
			ops, err := faultvfs.ReadLog(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if code != protocol.ExitCrash {
				if !strings.Contains(rep.Error, tt.cut.Point()) {
					t.Errorf("error %q does not name %s", rep.Error, tt.cut.Point())
				}
				return
			}
			if rep.CrashedAt != tt.cut.Point() || rep.Points[len(rep.Points)-1] != tt.cut.Point() {
				t.Errorf("crashed at %q after %q, want %q", rep.CrashedAt, rep.Points, tt.cut.Point())
			}
			want := tt.cut.N - 1
			if tt.cut.After {
				want = tt.cut.N
			}
			if got := faultvfs.Syncs(ops); got != want {
				t.Errorf("%d syncs logged, want %d", got, want)
			}
		})
	}
}

// TestSyncCutPublishesWrites: cut just before the database's sync, the
// child still holds its locks, so no release published the pages it wrote;
// the cut publishes them, so the torn mode has them to decide.
func TestSyncCutPublishesWrites(t *testing.T) {
	path := newDB(t, "DELETE")
	cut := protocol.SyncCut{N: 3}
	if code, rep := runChild(t, path, "DELETE", "FULL", 1, protocol.EnvCutAtSync+"="+cut.String()); code != protocol.ExitCrash {
		t.Fatalf("child exit %d, report %+v", code, rep)
	}
	ops, err := faultvfs.ReadLog(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	d, err := faultvfs.Derive(ops, faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tf := range d.Torn {
		names = append(names, tf.Name)
	}
	if diff := cmp.Diff([]string{filepath.Base(path)}, names); diff != "" {
		t.Errorf("files with unsynced writes (-want +got):\n%s\nlog: %+v", diff, ops)
	}
}

// TestReportDerives checks that a report carries the log it was made from,
// and that Derive gives back, from that log alone, the files it lists and
// the torn decisions it took.
func TestReportDerives(t *testing.T) {
	for _, o := range []faultvfs.Options{{Fault: faultvfs.FaultDrop}, {Fault: faultvfs.FaultTorn, Seed: 7}, {Fault: faultvfs.FaultTorn, Seed: 7, Unit: faultvfs.UnitPage}} {
		t.Run(fmt.Sprintf("%s unit %d", o.Fault, o.Unit), func(t *testing.T) {
			path := committed(t, "WAL", "NORMAL", 3)
			_, rep := cutCopyWith(t, path, o)
			if rep.Ops != len(rep.Log) || rep.Ops == 0 {
				t.Errorf("ops %d, log of %d", rep.Ops, len(rep.Log))
			}
			d, err := faultvfs.Derive(rep.Log, o)
			if err != nil {
				t.Fatal(err)
			}
			type row struct{ Name, Action string }
			var want, got []row
			for _, a := range d.Plan {
				want = append(want, row{a.Name, a.Kind})
			}
			for _, f := range rep.Files {
				if !strings.HasSuffix(f.Name, "-shm") {
					got = append(got, row{f.Name, f.Action})
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("files (-derived +reported):\n%s", diff)
			}
			if diff := cmp.Diff(d.Torn, rep.Torn); diff != "" {
				t.Errorf("torn decisions (-derived +reported):\n%s", diff)
			}
			if (o.Fault == faultvfs.FaultTorn) != (len(rep.Torn) == 1 && strings.HasSuffix(rep.Torn[0].Name, "-wal")) {
				t.Errorf("torn decisions %+v: the WAL's unsynced frames are the only unsynced writes", rep.Torn)
			}
		})
	}
}

// TestTornWALNeverCorrupts cuts three unsynced WAL+NORMAL commits under
// several seeds, with page units so that whole frames survive now and
// then. The WAL's frame checksums stop its replay at the first frame a seed
// dropped or garbled, so the file always checks as ok and holds a prefix of
// the commits; the same seed gives the same bytes.
func TestTornWALNeverCorrupts(t *testing.T) {
	path := committed(t, "WAL", "NORMAL", 3)
	seen := map[int]bool{}
	for seed := int64(1); seed <= 8; seed++ {
		o := faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: seed, Unit: faultvfs.UnitPage}
		a, _ := cutCopyWith(t, path, o)
		b, _ := cutCopyWith(t, path, o)
		wa, erra := os.ReadFile(a + "-wal")
		wb, errb := os.ReadFile(b + "-wal")
		if erra != nil || errb != nil || !bytes.Equal(wa, wb) {
			t.Fatalf("seed %d: two cuts differ (%v, %v)", seed, erra, errb)
		}
		n := rows(t, a, "WAL") // fails the test unless integrity_check says ok
		if n < 0 || n > 3 {
			t.Errorf("seed %d: %d rows", seed, n)
		}
		seen[n] = true
	}
	t.Logf("rows kept over 8 seeds: %v", seen)
}

// TestBreakIsCaught shows the two test-only broken recoveries do what they
// say on a DELETE FULL file: the real cut loses the last commit through the
// returning journal, the no-op cut loses nothing, and the cut that drops
// synced data loses both commits, while every report still lists the plan.
func TestBreakIsCaught(t *testing.T) {
	tests := []struct {
		name string
		brk  faultvfs.Break
		want int
	}{
		{"real", faultvfs.BreakNone, 1},
		{"no restore", faultvfs.BreakNoRestore, 2},
		{"drop synced", faultvfs.BreakDropSynced, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(faultvfs.SetBreakForTest(tt.brk))
			path := newDB(t, "DELETE")
			db := openVFS(t, path, "DELETE", "FULL")
			for i := 0; i < 2; i++ {
				if err := insert(context.Background(), db); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			rep, err := faultvfs.Recover(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if got := rows(t, path, "DELETE"); got != tt.want {
				t.Errorf("%d rows after the cut, want %d; report %+v", got, tt.want, rep.Files)
			}
			if !strings.Contains(cmpFiles(rep), "t.sqlite3-journal:"+faultvfs.ActResurrect) {
				t.Errorf("the report %s does not list the journal's return", cmpFiles(rep))
			}
		})
	}
}

func cmpFiles(rep faultvfs.Report) string {
	var out []string
	for _, f := range rep.Files {
		out = append(out, f.Name+":"+f.Action)
	}
	return strings.Join(out, " ")
}

// TestTornOnDisk cuts DELETE+OFF, which never syncs, under the torn mode
// with page units: the database's pages written since the baseline are
// each kept, dropped or garbled, and the test reports what integrity_check
// then says rather than asserting it, since OFF promises nothing.
func TestTornOnDisk(t *testing.T) {
	path := committed(t, "DELETE", "OFF", 3)
	for seed := int64(1); seed <= 4; seed++ {
		cut, rep := cutCopyWith(t, path, faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: seed, Unit: faultvfs.UnitPage})
		if len(rep.Torn) != 1 || rep.Torn[0].Name != filepath.Base(path) {
			t.Fatalf("seed %d: torn plan %+v, want the database alone", seed, rep.Torn)
		}
		t.Logf("seed %d: decisions %s, integrity %s", seed, rep.Torn[0].Decisions, integrity(t, cut))
	}
}

// integrity runs PRAGMA integrity_check and returns its first line or the
// error opening the file gave.
func integrity(tb testing.TB, path string) string {
	tb.Helper()
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, options(path, "DELETE", "FULL", ""))
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var s string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&s); err != nil {
		return err.Error()
	}
	return s
}

// committed makes n commits to a new file through the VFS and leaves the
// connection open until the test ends, as a process the power fails under.
func committed(tb testing.TB, journal, sync string, n int) string {
	tb.Helper()
	path := newDB(tb, journal)
	db := openVFS(tb, path, journal, sync)
	tb.Cleanup(func() { db.Close() })
	for i := 0; i < n; i++ {
		if err := insert(context.Background(), db); err != nil {
			tb.Fatalf("insert: %v (vfs: %v)", err, faultvfs.LastError())
		}
	}
	return path
}

// TestKeepBrackets: the keep mode leaves every commit written, synced or
// not, so it keeps all n commits under every setting, where the drop mode
// keeps only what syncs made durable: all n under DELETE/EXTRA, fewer under
// DELETE/FULL (the last commit's journal deletion was never synced, so the
// journal returns hot) and under WAL/NORMAL with the connection open
// (frames written, none synced). On a Sim the keep cut is what the
// processes see.
func TestKeepBrackets(t *testing.T) {
	const n = 3
	for _, tt := range []struct {
		journal, sync string
		dropKeepsAll  bool
	}{{"DELETE", "EXTRA", true}, {"DELETE", "FULL", false}, {"WAL", "NORMAL", false}} {
		t.Run(tt.journal+"/"+tt.sync, func(t *testing.T) {
			path := committed(t, tt.journal, tt.sync, n)
			keep, rep := cutCopyWith(t, path, faultvfs.Options{Fault: faultvfs.FaultKeep})
			drop, _ := cutCopyWith(t, path, faultvfs.Options{Fault: faultvfs.FaultDrop})
			if rep.Fault != faultvfs.FaultKeep {
				t.Errorf("report's fault %q", rep.Fault)
			}
			for _, f := range rep.Files {
				if !strings.HasSuffix(f.Name, "-shm") {
					t.Errorf("keep touched %s (%s)", f.Name, f.Action)
				}
			}
			k, d := rows(t, keep, tt.journal), rows(t, drop, tt.journal)
			if k != n || (d == n) != tt.dropKeepsAll {
				t.Errorf("keep %d rows, drop %d, of %d commits (drop keeps all: %v)", k, d, n, tt.dropKeepsAll)
			}
		})
	}
	s := faultvfs.NewSim()
	s.Create("f")
	if err := s.Write("f", 0, []byte("unsynced")); err != nil {
		t.Fatal(err)
	}
	got, err := s.CutWith(faultvfs.Options{Fault: faultvfs.FaultKeep})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Files(), got); diff != "" {
		t.Errorf("keep cut of a Sim (-live +cut):\n%s", diff)
	}
}
