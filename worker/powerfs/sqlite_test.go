package powerfs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/durability/syncmodel"
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
