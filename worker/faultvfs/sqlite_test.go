package faultvfs_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
)

// Environment of the child the tests start from their own binary.
const (
	envChild   = "FAULTVFS_TEST_CHILD"
	envDB      = "FAULTVFS_TEST_DB"
	envJournal = "FAULTVFS_TEST_JOURNAL"
	envSync    = "FAULTVFS_TEST_SYNC"
	envCommits = "FAULTVFS_TEST_COMMITS"
)

// TestMain lets the test binary act as a worker, as worker.TestMain does for
// the harness: the real power-cut test needs a process that really dies.
func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child commits some rows through the VFS the parent chose, then passes the
// crash point "committed".
func child() int {
	call := protocol.NewCall("faultvfs.test", nil, nil, os.Stdout, os.Stderr, os.Getenv(protocol.EnvCrashAt), nil)
	if err := call.Points.SetKind(os.Getenv(protocol.EnvCrashKind)); err != nil {
		return call.Usage(err)
	}
	cut, err := protocol.ParseSyncCut(os.Getenv(protocol.EnvCutAtSync))
	if err != nil {
		return call.Usage(err)
	}
	if cut.N > 0 {
		call.Points.Arm(cut.Point())
		if err := faultvfs.ArmSyncCut(cut.N, cut.After, call.Points.Crash); err != nil {
			return call.Usage(err)
		}
	}
	vfs, err := sqlitedb.VFSFromEnv()
	if err != nil {
		return call.Usage(err)
	}
	n, err := strconv.Atoi(os.Getenv(envCommits))
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, options(os.Getenv(envDB), os.Getenv(envJournal), os.Getenv(envSync), vfs))
	if err != nil {
		return call.Fail(err)
	}
	for i := 0; i < n; i++ {
		if err := insert(ctx, db); err != nil {
			return call.Fail(err)
		}
	}
	call.Points.Hit("committed")
	return call.Finish(map[string]int{"commits": n}, protocol.ExitACK)
}

func options(path, journal, sync, vfs string) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: journal, Synchronous: sync, VFS: vfs, BusyTimeout: 5 * time.Second}
}

func insert(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t(v) VALUES (randomblob(100))"); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// newDB creates a database with an empty table through the default VFS,
// closes it and baselines its folder, as the harness parent would.
func newDB(tb testing.TB, journal string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "t.sqlite3")
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, options(path, journal, "FULL", ""))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)"); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := faultvfs.Baseline(filepath.Dir(path)); err != nil {
		tb.Fatal(err)
	}
	return path
}

// openVFS opens path through the fault VFS; the caller decides whether it
// is ever closed, since a cut closes nothing.
func openVFS(tb testing.TB, path, journal, sync string) *sql.DB {
	tb.Helper()
	db, got, err := sqlitedb.Open(context.Background(), options(path, journal, sync, faultvfs.Name))
	if err != nil {
		tb.Fatalf("open through %s: %v (vfs: %v)", faultvfs.Name, err, faultvfs.LastError())
	}
	if got.VFS != faultvfs.Name {
		tb.Fatalf("settings say vfs %q", got.VFS)
	}
	return db
}

// rows opens path through the default VFS, as the next process after the
// cut would, checks its integrity and counts the rows.
func rows(tb testing.TB, path, journal string) int {
	tb.Helper()
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, options(path, journal, "FULL", ""))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil {
		tb.Fatal(err)
	}
	if check != "ok" {
		tb.Fatalf("integrity_check of %s: %s", path, check)
	}
	return n
}

// cutCopy stands for a power cut inside the test process: it copies the
// folder, sidecar included, while the connections stay open and untouched,
// and recovers the copy. Reading the files by path would drop this
// process's POSIX locks on them; the tests call it only between
// transactions, when an idle connection holds none on the database.
func cutCopy(tb testing.TB, path string) (string, faultvfs.Report) {
	tb.Helper()
	return cutCopyWith(tb, path, faultvfs.Options{})
}

// cutCopyWith is cutCopy under a chosen fault mode.
func cutCopyWith(tb testing.TB, path string, o faultvfs.Options) (string, faultvfs.Report) {
	tb.Helper()
	src := filepath.Dir(path)
	dst := tb.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	rep, err := faultvfs.RecoverWith(dst, o)
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(dst, filepath.Base(path)), rep
}

// durabilityCases are the package doc's durability rules, as rows left by
// a cut after two committed transactions.
var durabilityCases = []struct {
	name, journal, sync string
	want                int
	why                 string
}{
	{"WAL NORMAL loses committed transactions", "WAL", "NORMAL", 0, "a WAL commit with NORMAL is not synced"},
	{"WAL FULL keeps them", "WAL", "FULL", 2, "each WAL commit syncs the WAL, and its first sync the folder"},
	{"DELETE FULL loses the last one", "DELETE", "FULL", 1, "the journal's deletion is not durable, so it comes back hot and rolls the last commit back"},
	{"DELETE EXTRA keeps them", "DELETE", "EXTRA", 2, "EXTRA deletes the journal with a directory sync"},
}

func TestCutInProcess(t *testing.T) {
	for _, tt := range durabilityCases {
		t.Run(tt.name, func(t *testing.T) {
			path := newDB(t, tt.journal)
			db := openVFS(t, path, tt.journal, tt.sync)
			t.Cleanup(func() { db.Close() })
			ctx := context.Background()
			for i := 0; i < 2; i++ {
				if err := insert(ctx, db); err != nil {
					t.Fatalf("insert: %v (vfs: %v)", err, faultvfs.LastError())
				}
			}
			var before int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&before); err != nil {
				t.Fatal(err)
			}
			if before != 2 {
				t.Fatalf("before the cut the connection sees %d rows, want 2", before)
			}
			cut, rep := cutCopy(t, path)
			if got := rows(t, cut, tt.journal); got != tt.want {
				t.Errorf("after the cut %d rows, want %d (%s); recovery: %+v", got, tt.want, tt.why, rep)
			}
		})
	}
}

// runChild runs the test binary as a worker that commits n rows to path
// through the fault VFS, with extra environment, and returns its exit code
// and report.
func runChild(tb testing.TB, path, journal, sync string, n int, env ...string) (int, protocol.Report) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"=1", envDB+"="+path, envJournal+"="+journal, envSync+"="+sync, envCommits+"="+strconv.Itoa(n),
		protocol.EnvVFS+"="+protocol.VFSFault)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			tb.Fatal(err)
		}
		code = ee.ExitCode()
	}
	var rep protocol.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		tb.Fatalf("report %q: %v; stderr: %s", out.String(), err, errb.String())
	}
	return code, rep
}

func TestCutAcrossProcess(t *testing.T) {
	for _, tt := range durabilityCases {
		t.Run(tt.name, func(t *testing.T) {
			path := newDB(t, tt.journal)
			code, rep := runChild(t, path, tt.journal, tt.sync, 2,
				protocol.EnvCrashAt+"=committed", protocol.EnvCrashKind+"="+protocol.CrashKindPower)
			if code != protocol.ExitCrash {
				t.Fatalf("child exit %d, want %d; report %+v", code, protocol.ExitCrash, rep)
			}
			want := protocol.Report{Worker: "faultvfs.test", Points: []string{"committed"}, CrashedAt: "committed", CrashKind: protocol.CrashKindPower}
			if diff := cmp.Diff(want, rep); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			// What a plain kill leaves, read from a copy: the commits are
			// all there, so any loss below is the cut's doing.
			killed, err := os.MkdirTemp(t.TempDir(), "kill")
			if err != nil {
				t.Fatal(err)
			}
			copyFiles(t, filepath.Dir(path), killed)
			if got := rows(t, filepath.Join(killed, filepath.Base(path)), tt.journal); got != 2 {
				t.Errorf("after a kill %d rows, want 2", got)
			}
			recovered, err := faultvfs.Recover(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("recovery: %+v", recovered)
			if got := rows(t, path, tt.journal); got != tt.want {
				t.Errorf("after the cut %d rows, want %d (%s); recovery: %+v", got, tt.want, tt.why, recovered)
			}
		})
	}
}

// copyFiles copies the regular files of src, not the sidecar, into dst.
func copyFiles(tb testing.TB, src, dst string) {
	tb.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSyncByOneProcessCoversAnother checks the rule that fsync flushes the
// whole file whoever wrote it, and that WAL through the VFS works across
// processes: the parent's open connection must see the child's commit,
// which goes through the delegated shared-memory methods.
func TestSyncByOneProcessCoversAnother(t *testing.T) {
	ctx := context.Background()
	path := newDB(t, "WAL")
	db := openVFS(t, path, "WAL", "NORMAL")
	t.Cleanup(func() { db.Close() })
	if err := insert(ctx, db); err != nil {
		t.Fatalf("insert: %v (vfs: %v)", err, faultvfs.LastError())
	}
	alone, _ := cutCopy(t, path)
	if got := rows(t, alone, "WAL"); got != 0 {
		t.Fatalf("the NORMAL commit alone survives a cut with %d rows, want 0", got)
	}
	if code, rep := runChild(t, path, "WAL", "FULL", 1); code != protocol.ExitACK {
		t.Fatalf("child exit %d, report %+v", code, rep)
	}
	var seen int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if seen != 2 {
		t.Fatalf("the parent's connection sees %d rows after the child's commit, want 2", seen)
	}
	cut, rep := cutCopy(t, path)
	if got := rows(t, cut, "WAL"); got != 2 {
		t.Errorf("after the cut %d rows, want 2: the child's sync of the WAL covers the parent's frames; recovery: %+v", got, rep)
	}
}

func TestRecoverReport(t *testing.T) {
	path := newDB(t, "DELETE")
	db := openVFS(t, path, "DELETE", "FULL")
	t.Cleanup(func() { db.Close() })
	if err := insert(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	// A file the VFS never saw and that the baseline did not cover stays
	// untouched; a stray -shm goes.
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.sqlite3-shm"), []byte("index"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, rep := cutCopy(t, path)
	type row struct {
		Name, Action string
		Changed      bool
	}
	var got []row
	for _, f := range rep.Files {
		got = append(got, row{f.Name, f.Action, f.Changed})
	}
	want := []row{
		{"t.sqlite3", faultvfs.ActRestore, false},
		{"t.sqlite3-journal", faultvfs.ActResurrect, true},
		{"t.sqlite3-shm", faultvfs.ActRemove, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recovery report (-want +got):\n%s", diff)
	}
	if rep.Ops != 6 {
		t.Errorf("replayed %d ops, want 6 (adopt; create, sync, sync, sync, delete)", rep.Ops)
	}
}

func TestRecoverWithoutState(t *testing.T) {
	_, err := faultvfs.Recover(t.TempDir())
	if !errors.Is(err, faultvfs.ErrNoState) {
		t.Fatalf("Recover of a folder the VFS never used: %v, want ErrNoState", err)
	}
}

func TestVFSFromEnv(t *testing.T) {
	tests := []struct {
		env, want string
		wantErr   bool
	}{
		{"", "", false},
		{protocol.VFSFault, faultvfs.Name, false},
		{faultvfs.Name, faultvfs.Name, false},
		{"faulty", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(protocol.EnvVFS, tt.env)
			got, err := sqlitedb.VFSFromEnv()
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("VFSFromEnv() = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestIncrementalSync checks that copying only the changed ranges still
// makes the whole file durable: the parent's unsynced NORMAL frames and a
// child's FULL frames follow each other in one WAL, the child's sync must cover
// both, and the recovered WAL must equal the live one byte for byte. It
// also checks the point of the change: a FULL commit in a process whose
// image slots are warm copies a few pages, not the WAL.
func TestIncrementalSync(t *testing.T) {
	ctx := context.Background()
	path := newDB(t, "WAL")
	db := openVFS(t, path, "WAL", "NORMAL")
	t.Cleanup(func() { db.Close() })
	total := 0
	for round := 0; round < 3; round++ {
		// After a RESTART checkpoint the next commit writes the WAL from
		// its start, below the size of every earlier image, so only the
		// parent's published ranges can tell the child's sync to copy it.
		if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(RESTART)"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if err := insert(ctx, db); err != nil {
				t.Fatalf("insert: %v (vfs: %v)", err, faultvfs.LastError())
			}
		}
		if code, rep := runChild(t, path, "WAL", "FULL", 2); code != protocol.ExitACK {
			t.Fatalf("round %d: child exit %d, report %+v", round, code, rep)
		}
		total += 7
		cut, rep := cutCopy(t, path)
		live, err := os.ReadFile(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(cut + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(live, got) {
			t.Fatalf("round %d: the recovered WAL (%d bytes) differs from the live one (%d bytes); recovery: %+v", round, len(got), len(live), rep)
		}
		if n := rows(t, cut, "WAL"); n != total {
			t.Errorf("round %d: %d rows after the cut, want %d", round, n, total)
		}
	}

	full := openVFS(t, path, "WAL", "FULL")
	t.Cleanup(func() { full.Close() })
	for i := 0; i < 3; i++ { // the first syncs fill the spare slots
		if err := insert(ctx, full); err != nil {
			t.Fatal(err)
		}
	}
	const commits = 20
	before := faultvfs.Copied()
	for i := 0; i < commits; i++ {
		if err := insert(ctx, full); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if per := (faultvfs.Copied() - before) / commits; per > 4*4096+1024 || per >= st.Size()/2 {
		t.Errorf("a FULL commit copied %d bytes on average; the WAL is %d bytes and a commit writes a page or two", per, st.Size())
	}
}

func TestMergeSpans(t *testing.T) {
	tests := []struct {
		name string
		a, b []faultvfs.Span
		want []faultvfs.Span
	}{
		{"empty", nil, nil, nil},
		{"disjoint, sorted", []faultvfs.Span{{10, 20}}, []faultvfs.Span{{0, 5}}, []faultvfs.Span{{0, 5}, {10, 20}}},
		{"touching coalesce", []faultvfs.Span{{0, 5}}, []faultvfs.Span{{5, 9}}, []faultvfs.Span{{0, 9}}},
		{"overlap keeps the larger end", []faultvfs.Span{{0, 50}}, []faultvfs.Span{{10, 20}}, []faultvfs.Span{{0, 50}}},
		{"to the end swallows what follows", []faultvfs.Span{{100, faultvfs.ToEnd}}, []faultvfs.Span{{150, 160}, {0, 4}}, []faultvfs.Span{{0, 4}, {100, faultvfs.ToEnd}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, faultvfs.MergeSpans(tt.a, tt.b)); diff != "" {
				t.Errorf("MergeSpans (-want +got):\n%s", diff)
			}
		})
	}
}
