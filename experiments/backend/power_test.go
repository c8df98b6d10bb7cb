package backend

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// breakKeep names the broken mount server whose cut keeps everything,
// even under drop.
const breakKeep = "powerfs-cut-keeps-all"

// TestMain lets the test binary serve mounts: a power cluster re-executes
// it as "worker powerfs.serve".
func TestMain(m *testing.M) {
	worker.TestMain(m, worker.Breaks{breakKeep: {powerfs.WorkerName: powerfs.BrokenKeepMain}})
}

// needPower skips a test on a machine without FUSE or PostgreSQL, saying
// which.
func needPower(t testing.TB) {
	t.Helper()
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
	if _, err := FindBinaries(); err != nil {
		t.Skip(err)
	}
}

// powerRows is the trial's table and the query of what survived.
const (
	powerDDL   = "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)"
	powerQuery = "SELECT id::text FROM t ORDER BY t.id"
)

// ackedTrial is the matrix's workload: Setup, then n autocommit inserts
// on one session, each ACKed (its Exec returned), then a cut after the
// last ACK. It returns the ACKed ids, the mount's syncs between Setup and
// the cut, and the outcome.
func ackedTrial(t testing.TB, cfg PowerConfig, n int) (acked []string, syncs int, o PowerOutcome) {
	t.Helper()
	ctx := context.Background()
	tmp := serverTemp(t)
	p, err := StartPowerCluster(ctx, tmp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		leftBehind(t, tmp)
	}()
	t0 := time.Now()
	if err := p.Setup(ctx, powerDDL); err != nil {
		t.Fatal(err)
	}
	t.Logf("start %v setup %v", p.StartedIn, time.Since(t0))
	before, err := p.Syncs()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for i := 1; i <= n; i++ {
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ($1, 'row')", i); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, fmt.Sprint(i))
	}
	db.Close()
	after, err := p.Syncs()
	if err != nil {
		t.Fatal(err)
	}
	if o, err = p.Cut(ctx, powerQuery); err != nil {
		t.Fatal(err)
	}
	return acked, after - before, o
}

// serverTemp is a temp folder the server's OS user can reach, with a name
// short enough for the server's socket (108 bytes at most), which
// t.TempDir's names of subtests are not.
func serverTemp(t testing.TB) string {
	t.Helper()
	tmp, err := os.MkdirTemp("", "pgpower-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// leftBehind fails t if anything of a power cluster under tmp is left: a
// server process, a mount, a folder.
func leftBehind(t testing.TB, tmp string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(tmp, "idemlab-pg-*"))
	for _, d := range dirs {
		t.Errorf("the cluster's folder %s is left", d)
		if p := ClusterProcesses(d); len(p) > 0 {
			t.Errorf("server processes %v are left in %s", p, d)
		}
	}
	ms, err := powerfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Mountpoint, tmp+"/") {
			t.Errorf("%s is still mounted", m.Mountpoint)
		}
	}
}

// TestPowerMatrix cuts the power after the last ACK under drop, on every
// cell of fsync × synchronous_commit × full_page_writes, and holds each
// to what PostgreSQL's documentation says of it:
//   - fsync and synchronous_commit on: a commit returns after its WAL is
//     flushed, so no ACKed row is lost, and nothing is corrupt.
//   - synchronous_commit off, fsync on: a commit returns before its WAL
//     is flushed; the WAL writer flushes it within 3 × wal_writer_delay.
//     PowerQuiet holds that writer (and every other flusher) still for
//     the trial, so the op log shows no sync between Setup and the cut,
//     and every row ACKed since is lost, all together: the database is
//     the one Setup left, consistent.
//   - fsync off: the server never syncs, so a cut may lose anything, or
//     leave a folder the server cannot start on; recorded, not held.
//
// Under drop full_page_writes has nothing to do: no page is torn.
func TestPowerMatrix(t *testing.T) {
	needPower(t)
	const n = 20
	onOff := []string{"on", "off"}
	for _, fsync := range onOff {
		for _, sc := range onOff {
			for _, fpw := range onOff {
				s := PowerSettings{Fsync: fsync, SynchronousCommit: sc, FullPageWrites: fpw}
				t.Run(fmt.Sprintf("fsync_%s-synchronous_commit_%s-full_page_writes_%s", fsync, sc, fpw), func(t *testing.T) {
					acked, syncs, o := ackedTrial(t, PowerConfig{Settings: s, Params: powerfs.Params{Model: powerfs.ModelDrop}}, n)
					t.Logf("started=%v rows=%d/%d acked rows_err=%q syncs=%d indexes=%d amcheck=%q checksum_failures=%d rejected=%d quiet=%v cut=%v restart=%v check=%v",
						o.Started, len(o.Rows), len(acked), o.RowsErr, syncs, o.Indexes, o.Amcheck, o.ChecksumFailures, len(o.Rejected), o.QuietHeld,
						o.CutTook.Round(time.Millisecond), o.RestartTook.Round(time.Millisecond), o.CheckTook.Round(time.Millisecond))
					if !o.Started {
						t.Logf("the server's log: %q", o.StartLog)
					}
					if len(o.Log) == 0 || o.Cut.Model != powerfs.ModelDrop {
						t.Errorf("the outcome keeps no op log (%d ops) or another model (%q)", len(o.Log), o.Cut.Model)
					}
					if fsync == "off" {
						return
					}
					if !o.Started || o.RowsErr != "" {
						t.Fatalf("the server did not recover: started=%v, query: %s, log: %q", o.Started, o.RowsErr, o.StartLog)
					}
					if o.Corrupt() || o.Indexes == 0 {
						t.Errorf("amcheck over %d indexes: %q, checksum failures %d, %q", o.Indexes, o.Amcheck, o.ChecksumFailures, o.Rejected)
					}
					want := acked
					if sc == "off" {
						if !o.QuietHeld {
							t.Fatalf("the trial outlasted wal_writer_delay: a WAL writer flush may have fallen in it")
						}
						if syncs != 0 {
							t.Errorf("the mount saw %d syncs between Setup and the cut; PowerQuiet should leave none", syncs)
						}
						want = []string{}
					} else if syncs < n {
						t.Errorf("the mount saw %d syncs for %d synchronous commits", syncs, n)
					}
					if diff := cmp.Diff(want, o.Rows); diff != "" {
						t.Errorf("rows after the cut (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}
