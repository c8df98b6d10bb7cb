package powerfs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/syncmodel"
	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// commitOnce is a Python handler: one row committed under the journal
// mode and synchronous setting it is given, an ACK, then it stays with its
// connection open until it is killed.
const commitOnce = `
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=" + sys.argv[2]).fetchall()
db.execute("PRAGMA synchronous=" + sys.argv[3])
db.execute("INSERT INTO t(v) VALUES ('acked')")
db.commit()
print("ACK", flush=True)
time.sleep(600)
`

// readBack opens the database in the backing folder, as the next process
// after the power cut would, which rolls a hot journal back, and counts
// the rows; integrity_check must pass.
const readBack = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT count(*) FROM t").fetchone()[0], db.execute("PRAGMA integrity_check").fetchone()[0])
`

// found is what a cut left of the commit.
type found struct {
	Rows        int
	JournalBack bool
}

// powerCutAfterACK runs commitOnce on a mount, cuts after its ACK and
// reads the database back from the backing folder.
func powerCutAfterACK(t *testing.T, journal, sync string, p powerfs.Params) found {
	t.Helper()
	cfg := trial(t, p)
	db := filepath.Join(cfg.Backing, "app.db")
	setup := `import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("PRAGMA journal_mode=` + journal + `").fetchall()
db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)"); db.commit(); db.close()`
	if out, err := exec.Command("python3", "-c", setup, db).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := start(t, cfg)
	s := python(t, commitOnce, filepath.Join(cfg.Mountpoint, "app.db"), journal, sync)
	if got := waitAckOrCut(t, m, s); got != "ack" {
		t.Fatalf("the handler stopped at %q before its ACK", got)
	}
	if _, err := m.Cut(s.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if powerfs.IsMounted(cfg.Mountpoint) {
		t.Fatal("still mounted after the cut")
	}
	var f found
	if _, err := os.Stat(db + "-journal"); err == nil {
		f.JournalBack = true
	}
	out, err := exec.Command("python3", "-c", readBack, db).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var integrity string
	if _, err := fmt.Sscan(string(out), &f.Rows, &integrity); err != nil || integrity != "ok" {
		t.Fatalf("read back %q: %v", out, err)
	}
	return f
}

// agrees compares what a cut on the mount left with the exact model's
// prediction for the same setting: a process that committed once and
// was cut after its ACK, its connection open.
func agrees(journal, sync string, got found) error {
	r, err := syncmodel.PowerCut(syncmodel.Setting{JournalMode: journal, Synchronous: sync},
		syncmodel.Process{Commits: 1, End: syncmodel.EndOpen}, syncmodel.Cut{}, nil)
	if err != nil {
		return err
	}
	var diffs []string
	if r.Min != r.Max || got.Rows != r.Min {
		diffs = append(diffs, fmt.Sprintf("rows %d, the model says %d..%d", got.Rows, r.Min, r.Max))
	}
	if want := slices.Contains(r.Resurrected, syncmodel.FileJournal); got.JournalBack != want {
		diffs = append(diffs, fmt.Sprintf("journal back %v, the model says %v", got.JournalBack, want))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s/%s: %s", journal, sync, strings.Join(diffs, "; "))
	}
	return nil
}

// TestSQLiteCommitMatchesSyncModel: Python's sqlite3 commits on the mount,
// and a drop cut after the ACK under strict POSIX directories leaves what
// syncmodel predicts for its setting.
func TestSQLiteCommitMatchesSyncModel(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	for _, sync := range []string{"FULL", "EXTRA"} {
		t.Run("DELETE/"+sync, func(t *testing.T) {
			got := powerCutAfterACK(t, "DELETE", sync, powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX})
			t.Logf("DELETE/%s after the ACK: %+v", sync, got)
			if err := agrees("DELETE", sync, got); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestBrokenCutDisagreesWithSyncModel: a server whose cut keeps everything
// under drop must fail the same comparison where the model loses the ACKed
// row (DELETE/FULL).
func TestBrokenCutDisagreesWithSyncModel(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	t.Setenv(worker.EnvBreak, breakKeep)
	got := powerCutAfterACK(t, "DELETE", "FULL", powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX})
	err := agrees("DELETE", "FULL", got)
	if err == nil {
		t.Fatalf("the broken cut left %+v and the comparison passed", got)
	}
	t.Logf("the comparison caught the broken cut: %v", err)
}

// fsSync is one sync the filesystem sees, and the exact model's cut that
// leaves the same state when the filesystem cuts before or after it; ok
// is false where the filesystem can stop between two halves of one of the
// model's ops (a journal's fsync and the directory fsync the unix VFS
// makes inside the same xSync, or an unlink and its directory fsync),
// a state the model does not name.
type fsSync struct {
	dir               bool
	before, after     syncmodel.Cut
	beforeOK, afterOK bool
}

// fsSyncs derives, from syncmodel's schedule for the setting, the syncs a
// process's commits make on the filesystem: every xSync is one fsync, and
// one more of the directory when it syncs the directory; a deletion made
// durable is an unlink and a directory fsync.
func fsSyncs(s syncmodel.Setting, p syncmodel.Process) ([]fsSync, error) {
	ops, err := syncmodel.Schedule(s, p)
	if err != nil {
		return nil, err
	}
	var out []fsSync
	k := 0
	for _, op := range ops {
		switch {
		case op.Kind == syncmodel.OpSync:
			k++
			before, after := syncmodel.Cut{Sync: k}, syncmodel.Cut{Sync: k, After: true}
			if op.DirSync {
				out = append(out, fsSync{before: before, beforeOK: true},
					fsSync{dir: true, after: after, afterOK: true})
				continue
			}
			out = append(out, fsSync{before: before, after: after, beforeOK: true, afterOK: true})
		case op.Kind == syncmodel.OpDelete && op.DirSync:
			// After it, the state the model reaches before its next sync, or
			// at its end.
			out = append(out, fsSync{dir: true, after: syncmodel.Cut{Sync: k + 1}, afterOK: true})
		}
	}
	n := k
	for i := range out {
		if out[i].afterOK && out[i].after.Sync > n {
			out[i].after = syncmodel.Cut{}
		}
	}
	return out, nil
}

// TestSQLiteSyncCutsMatchSyncModel cuts Python's sqlite3 commit on the
// mount before and after each of its filesystem syncs, and compares the
// rows the next open finds with syncmodel's prediction for the same
// point. A run without a cut first checks that the filesystem saw as many
// syncs as the model's schedule makes.
func TestSQLiteSyncCutsMatchSyncModel(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	p := syncmodel.Process{Commits: 1, End: syncmodel.EndOpen}
	for _, sync := range []string{"FULL", "EXTRA"} {
		setting := syncmodel.Setting{JournalMode: "DELETE", Synchronous: sync}
		syncs, err := fsSyncs(setting, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("DELETE/"+sync+"/discovery", func(t *testing.T) {
			o := commitOnMount(t, setting, powerfs.Config{})
			if o.Syncs != len(syncs) {
				t.Errorf("the mount saw %d syncs, the model's schedule makes %d", o.Syncs, len(syncs))
			}
		})
		for i, s := range syncs {
			for _, after := range []bool{false, true} {
				cut, ok := s.before, s.beforeOK
				if after {
					cut, ok = s.after, s.afterOK
				}
				if !ok {
					continue
				}
				name := fmt.Sprintf("DELETE/%s/%s-%d", sync, map[bool]string{false: "before", true: "after"}[after], i+1)
				t.Run(name, func(t *testing.T) {
					want, err := syncmodel.PowerCut(setting, p, cut, nil)
					if err != nil {
						t.Fatal(err)
					}
					rows := commitOnMountRows(t, setting, powerfs.Config{CutSync: i + 1, CutAfter: after})
					if rows < want.Min || rows > want.Max {
						t.Errorf("rows %d after the cut, the model says %d..%d (cut %+v)", rows, want.Min, want.Max, cut)
					}
				})
			}
		}
	}
}

// commitOnMount runs commitOnce on a fresh mount with the cut point of
// cut, cuts when it stops (at the sync, or after its ACK) under drop and
// strict POSIX, and returns the outcome.
func commitOnMount(t *testing.T, s syncmodel.Setting, cut powerfs.Config) powerfs.Outcome {
	t.Helper()
	o, _ := commitCut(t, s, cut)
	return o
}

func commitOnMountRows(t *testing.T, s syncmodel.Setting, cut powerfs.Config) int {
	t.Helper()
	_, rows := commitCut(t, s, cut)
	return rows
}

func commitCut(t *testing.T, s syncmodel.Setting, cut powerfs.Config) (powerfs.Outcome, int) {
	t.Helper()
	cfg := trial(t, powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX})
	cfg.CutSync, cfg.CutAfter = cut.CutSync, cut.CutAfter
	db := filepath.Join(cfg.Backing, "app.db")
	setup := `import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("PRAGMA journal_mode=` + s.JournalMode + `").fetchall()
db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)"); db.commit(); db.close()`
	if out, err := exec.Command("python3", "-c", setup, db).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := start(t, cfg)
	sub := python(t, commitOnce, filepath.Join(cfg.Mountpoint, "app.db"), s.JournalMode, s.Synchronous)
	stopped := waitAckOrCut(t, m, sub)
	if want := map[bool]string{true: "ack", false: map[bool]string{false: "before", true: "after"}[cut.CutAfter]}[cut.CutSync == 0]; stopped != want {
		t.Fatalf("the handler stopped at %q, want %q", stopped, want)
	}
	o, err := m.Cut(sub.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "-c", readBack, db).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rows int
	var integrity string
	if _, err := fmt.Sscan(string(out), &rows, &integrity); err != nil || integrity != "ok" {
		t.Fatalf("read back %q: %v", out, err)
	}
	return o, rows
}
