package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/procstat"
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
	if err := p.Setup(ctx, powerDDL); err != nil {
		t.Fatal(err)
	}
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
// to what PostgreSQL's documentation says of it (matrixFailures). Under
// drop full_page_writes has nothing to do: no page is torn.
func TestPowerMatrix(t *testing.T) {
	needPower(t)
	for _, s := range powerMatrix() {
		t.Run(s.name(), func(t *testing.T) {
			acked, syncs, o := ackedTrial(t, PowerConfig{Settings: s, Params: powerfs.Params{Model: powerfs.ModelDrop}}, matrixRows)
			logOutcome(t, acked, syncs, o)
			for _, f := range matrixFailures(s, acked, syncs, o) {
				t.Error(f)
			}
		})
	}
}

// TestPowerBrokenCut runs three cells of the matrix on a broken mount
// server whose cut keeps everything under drop, as a process crash
// would. On/on/on cannot tell: it loses nothing either way. Nor can
// synchronous_commit=off: its ACKed commits never left the server's WAL
// buffers (no WAL page filled, so the WAL writer wrote none), and a crash
// loses them as a cut does. fsync=off can: each commit writes its WAL to
// the file and never syncs it, so the drop model loses every row and the
// broken cut keeps them all, which its check names.
func TestPowerBrokenCut(t *testing.T) {
	needPower(t)
	t.Setenv(worker.EnvBreak, breakKeep)
	for _, tt := range []struct {
		s     PowerSettings
		fails bool
	}{
		{PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}, false},
		{PowerSettings{Fsync: "on", SynchronousCommit: "off", FullPageWrites: "on"}, false},
		{PowerSettings{Fsync: "off", SynchronousCommit: "on", FullPageWrites: "on"}, true},
	} {
		t.Run(tt.s.name(), func(t *testing.T) {
			acked, syncs, o := ackedTrial(t, PowerConfig{Settings: tt.s, Params: powerfs.Params{Model: powerfs.ModelDrop}}, matrixRows)
			logOutcome(t, acked, syncs, o)
			f := matrixFailures(tt.s, acked, syncs, o)
			t.Logf("the check on the broken cut: %q", f)
			if (len(f) > 0) != tt.fails {
				t.Errorf("the check failed = %v, want %v", len(f) > 0, tt.fails)
			}
		})
	}
}

// matrixRows is how many rows a matrix trial inserts.
const matrixRows = 20

// powerMatrix is fsync × synchronous_commit × full_page_writes.
func powerMatrix() []PowerSettings {
	var out []PowerSettings
	for _, fsync := range []string{"on", "off"} {
		for _, sc := range []string{"on", "off"} {
			for _, fpw := range []string{"on", "off"} {
				out = append(out, PowerSettings{Fsync: fsync, SynchronousCommit: sc, FullPageWrites: fpw})
			}
		}
	}
	return out
}

// name names s for a subtest, with no comma: the server's socket folder
// is a comma-separated list.
func (s PowerSettings) name() string {
	return fmt.Sprintf("fsync_%s-synchronous_commit_%s-full_page_writes_%s", s.Fsync, s.SynchronousCommit, s.FullPageWrites)
}

func logOutcome(t testing.TB, acked []string, syncs int, o PowerOutcome) {
	t.Helper()
	t.Logf("started=%v rows=%d/%d acked rows_err=%q syncs=%d indexes=%d amcheck=%q checksum_failures=%d rejected=%d quiet=%v cut=%v restart=%v check=%v",
		o.Started, len(o.Rows), len(acked), o.RowsErr, syncs, o.Indexes, o.Amcheck, o.ChecksumFailures, len(o.Rejected), o.QuietHeld,
		o.CutTook.Round(time.Millisecond), o.RestartTook.Round(time.Millisecond), o.CheckTook.Round(time.Millisecond))
	if !o.Started {
		t.Logf("the server's log: %q", o.StartLog)
	}
}

// matrixFailures holds a cut after the last ACK under drop to
// PostgreSQL's documentation:
//   - fsync and synchronous_commit on: a commit returns after its WAL is
//     flushed, so no ACKed row is lost, and nothing is corrupt.
//   - synchronous_commit off, fsync on: a commit returns before its WAL
//     is flushed; the WAL writer flushes it within 3 × wal_writer_delay.
//     PowerQuiet holds that writer (and every other flusher) still for
//     the trial, so the op log shows no sync between Setup and the cut,
//     and every row ACKed since is lost, all together: the database is
//     the one Setup left, consistent.
//   - fsync off: the server never syncs, so a cut may lose anything, or
//     leave a folder the server cannot start on; recorded, not held. The
//     drop model alone says more: a mount that saw no sync keeps no row.
func matrixFailures(s PowerSettings, acked []string, syncs int, o PowerOutcome) []string {
	var out []string
	if len(o.Log) == 0 || o.Cut.Model != powerfs.ModelDrop {
		out = append(out, fmt.Sprintf("the outcome keeps no op log (%d ops) or another model (%q)", len(o.Log), o.Cut.Model))
	}
	if d := replan(o); d != "" {
		out = append(out, d)
	}
	if s.Fsync == "off" {
		// PostgreSQL promises nothing; the drop model does: a mount that
		// saw no sync since its start comes back as it started, so no row
		// written since survives, whether the server starts or not.
		if o.Cut.Syncs == 0 && o.Started && len(o.Rows) > 0 {
			out = append(out, fmt.Sprintf("the mount saw no sync, yet %d ACKed rows survive drop", len(o.Rows)))
		}
		return out
	}
	if !o.Started || o.RowsErr != "" {
		return append(out, fmt.Sprintf("the server did not recover: started=%v, query: %s, log: %q", o.Started, o.RowsErr, o.StartLog))
	}
	if o.Corrupt() || o.Indexes == 0 {
		out = append(out, fmt.Sprintf("amcheck over %d indexes: %q, checksum failures %d, %q", o.Indexes, o.Amcheck, o.ChecksumFailures, o.Rejected))
	}
	if field, text := CheckChecksums(o, true); field != "" {
		out = append(out, field+": "+text)
	}
	want := acked
	if s.SynchronousCommit == "off" {
		if !o.QuietHeld {
			return append(out, "the trial outlasted wal_writer_delay: a WAL writer flush may have fallen in it")
		}
		if syncs != 0 {
			out = append(out, fmt.Sprintf("the mount saw %d syncs between Setup and the cut; PowerQuiet should leave none", syncs))
		}
		want = []string{}
	} else if syncs < len(acked) {
		out = append(out, fmt.Sprintf("the mount saw %d syncs for %d synchronous commits", syncs, len(acked)))
	}
	if diff := cmp.Diff(want, o.Rows); diff != "" {
		out = append(out, fmt.Sprintf("rows after the cut (-want +got):\n%s", diff))
	}
	return out
}

// syncTrial is ackedTrial with its inserts on their own goroutine, so a
// sync cut may freeze one: the cut comes when the mount freezes, or after
// the last ACK. It returns the ACKed ids, the mount's syncs before each
// insert (read when no cut is configured), whether the mount froze, and
// the outcome.
func syncTrial(t testing.TB, cfg PowerConfig, n int) (acked []string, before []int, froze bool, o PowerOutcome) {
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
	if err := p.Setup(ctx, powerDDL); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ack := make(chan string, n)
	done := make(chan error, 1)
	go func() {
		defer close(ack)
		for i := 1; i <= n; i++ {
			if cfg.CutSync == 0 {
				s, err := p.Syncs()
				if err != nil {
					done <- err
					return
				}
				before = append(before, s)
			}
			if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ($1, 'row')", i); err != nil {
				done <- err // the cut ended the session
				return
			}
			ack <- fmt.Sprint(i)
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-p.Frozen():
		froze = true
	}
	if o, err = p.Cut(ctx, powerQuery); err != nil {
		t.Fatal(err)
	}
	if froze {
		<-done
	}
	for id := range ack {
		acked = append(acked, id)
	}
	return acked, before, froze, o
}

// TestPowerSyncCut cuts at the sync of the last insert's commit under
// on/on/on and drop, found by a run without a cut that counts the mount's
// syncs before each insert. Before that sync the commit is not durable
// and never ACKed: the rows are the ACKed ones. After it the commit is
// durable though never ACKed: one row more than the ACKed ones survives.
func TestPowerSyncCut(t *testing.T) {
	needPower(t)
	const n = 5
	s := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}
	_, before, _, _ := syncTrial(t, PowerConfig{Settings: s, Params: powerfs.Params{Model: powerfs.ModelDrop}}, n)
	if len(before) != n {
		t.Fatalf("the run without a cut counted syncs before %d inserts, want %d", len(before), n)
	}
	last := before[n-1] + 1
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) {
			acked, _, froze, o := syncTrial(t, PowerConfig{Settings: s, Params: powerfs.Params{Model: powerfs.ModelDrop}, CutSync: last, CutAfter: after}, n)
			logOutcome(t, acked, 0, o)
			if !froze || o.Cut.Cut == nil || o.Cut.Cut.Sync != last {
				t.Fatalf("the mount did not freeze at sync %d: froze=%v, cut %+v", last, froze, o.Cut.Cut)
			}
			want := acked
			if after {
				want = append(slices.Clone(acked), fmt.Sprint(len(acked)+1))
			}
			if diff := cmp.Diff(want, o.Rows); diff != "" || o.Corrupt() {
				t.Errorf("rows after the cut (-want +got):\n%s; amcheck %q, checksum failures %d", diff, o.Amcheck, o.ChecksumFailures)
			}
			if len(acked) != n-1 {
				t.Errorf("%d inserts ACKed before the cut at the last one's sync, want %d", len(acked), n-1)
			}
		})
	}
}

// tornDDL fills a table over a few dozen pages; tornUpdate changes every
// page of it after a checkpoint made them durable.
const (
	tornDDL    = "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL); INSERT INTO t SELECT g, repeat('a', 200) FROM generate_series(1, 1000) g"
	tornUpdate = "UPDATE t SET v = repeat('b', 200)"
	tornQuery  = "SELECT count(*)::text FROM t WHERE v = repeat('b', 200)"
)

// tornTrial: Setup, a CHECKPOINT (the table's pages durable, and under
// ext4-ordered its name), an UPDATE of every row, and a second
// CHECKPOINT, whose writes of the table's pages a cut at cfg.CutSync can
// catch before their sync. Without a cut it returns the syncs before the
// second checkpoint; it returns the table's file, relative to the data
// folder, and its inode.
func tornTrial(t testing.TB, cfg PowerConfig) (syncsBefore int, rel string, ino uint64, acked string, froze bool, o PowerOutcome) {
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
	if err := p.Setup(ctx, tornDDL); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{"CHECKPOINT", tornUpdate} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT pg_relation_filepath('t'), ("+tornQuery+")").Scan(&rel, &acked); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(p.backing, rel), &st); err != nil {
		t.Fatal(err)
	}
	ino = st.Ino
	if syncsBefore, err = p.Syncs(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "CHECKPOINT")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-p.Frozen():
		froze = true
	}
	if o, err = p.Cut(ctx, tornQuery); err != nil {
		t.Fatal(err)
	}
	if froze {
		<-done
	}
	return syncsBefore, rel, ino, acked, froze, o
}

// TestPowerTornPages cuts under torn (ext4-ordered, so the table's file
// keeps its name) before the second checkpoint syncs the table's pages it
// wrote, for full_page_writes on and off over a few seeds, and records
// what recovery made of the torn pages. PostgreSQL's documentation says
// full_page_writes=off may then leave a page that the data checksums
// reject, not that it must: that is recorded, not held. Held: the cut
// fell at that sync, the torn model decided the table's units, and with
// full_page_writes on recovery restores every torn page from its full
// image in the WAL: the server starts, the ACKed update is whole and
// nothing is corrupt.
func TestPowerTornPages(t *testing.T) {
	needPower(t)
	base := PowerConfig{Settings: PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"},
		Params: powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirExt4}}
	before, _, ino, _, _, o := tornTrial(t, base)
	at := 0
	for _, op := range o.Log {
		if op.Kind == powerfs.OpFsync && op.Ino == ino && op.Sync > before {
			at = op.Sync
			break
		}
	}
	if at == 0 {
		t.Fatalf("the second checkpoint never synced the table's file (inode %d)", ino)
	}
	for _, fpw := range []string{"on", "off"} {
		for seed := int64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("full_page_writes_%s-seed_%d", fpw, seed), func(t *testing.T) {
				cfg := base
				cfg.Settings.FullPageWrites = fpw
				cfg.Params.Model, cfg.Params.Seed, cfg.Params.Unit = powerfs.ModelTorn, seed, 512
				cfg.CutSync = at
				_, rel, _, acked, froze, o := tornTrial(t, cfg)
				if !froze || o.Cut.Cut == nil || o.Cut.Cut.Sync != at {
					t.Fatalf("the mount did not freeze at sync %d: %+v", at, o.Cut.Cut)
				}
				decided := ""
				for _, f := range o.Cut.Files {
					if f.Path == rel {
						decided = f.Decisions
					}
				}
				if decided == "" {
					t.Fatalf("the cut tore nothing of the table's file %s: %+v", rel, o.Cut.Files)
				}
				if d := replan(o); d != "" {
					t.Error(d)
				}
				t.Logf("units k/d/g=%d/%d/%d started=%v rows=%q rows_err=%q amcheck=%q checksum_failures=%d rejected=%q start_log_tail=%q",
					strings.Count(decided, "k"), strings.Count(decided, "d"), strings.Count(decided, "g"),
					o.Started, o.Rows, o.RowsErr, o.Amcheck, o.ChecksumFailures, o.Rejected, lastOf(o.StartLog, 3))
				if fpw == "on" && (!o.Started || o.Corrupt() || !cmp.Equal(o.Rows, []string{acked})) {
					t.Errorf("full_page_writes=on: started=%v, rows %q, want [%s], amcheck %q, checksum failures %d, rejected %q",
						o.Started, o.Rows, acked, o.Amcheck, o.ChecksumFailures, o.Rejected)
				}
			})
		}
	}
}

// replan derives the cut again from the outcome's op log and models
// alone, as a fold would (powerfs.Plan), and says how it differs from
// what the cut did; "" when it does not.
func replan(o PowerOutcome) string {
	again, err := powerfs.Plan(o.Log, powerfs.Params{Model: o.Cut.Model, DirModel: o.Cut.DirModel, Seed: o.Cut.Seed, Unit: o.Cut.Unit})
	if err != nil {
		return fmt.Sprintf("Plan over the kept op log: %v", err)
	}
	if diff := cmp.Diff(o.Cut, again); diff != "" {
		return fmt.Sprintf("Plan over the kept op log derives another cut (-cut +plan):\n%s", diff)
	}
	return ""
}

func lastOf(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// TestPowerLeavesNothing: after a start that fails, a context cancelled
// before the start, one cancelled before the cut, and a sync cut that
// falls inside the server's start, no server process, mount or folder is
// left (a pass, and a restart that fails, are checked by every trial
// above).
func TestPowerLeavesNothing(t *testing.T) {
	needPower(t)
	ok := PowerConfig{Settings: PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}}
	for _, tt := range []struct {
		name        string
		cfg         PowerConfig
		cancelStart bool
		cancelCut   bool
	}{
		{"a start that fails", PowerConfig{Settings: PowerSettings{Fsync: "maybe"}}, false, false},
		{"cancelled before the start", ok, true, false},
		{"cancelled before the cut", ok, false, true},
		{"a cut inside the server's start", PowerConfig{CutSync: 1}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := serverTemp(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelStart {
				cancel()
			}
			p, err := StartPowerCluster(ctx, tmp, tt.cfg)
			if tt.cancelCut {
				if err != nil {
					t.Fatal(err)
				}
				cancel()
				_, err = p.Cut(ctx, powerQuery)
				err = errors.Join(err, p.Close())
			}
			if err == nil {
				t.Error("no error")
			}
			t.Logf("error: %v", err)
			leftBehind(t, tmp)
		})
	}
}

// TestSweepPowerCluster: a power cluster whose owner is gone and whose
// mount server died (a harness SIGKILLed with its whole group) leaves a
// mount answering "transport endpoint is not connected" and a running
// server; the next run's sweep stops the server, unmounts the mount,
// removes the folder, and says so.
func TestSweepPowerCluster(t *testing.T) {
	needPower(t)
	tmp := serverTemp(t)
	p, err := StartPowerCluster(context.Background(), tmp, PowerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	gone := self
	gone.PID = 1 << 30
	if err := writeOwner(p.Dir, gone); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.mount.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !powerfs.IsMounted(p.mnt) || serverRuns(p.mount.Pid()) {
		if time.Now().After(deadline) {
			t.Fatalf("the mount server did not die, or took its mount with it (mounted=%v)", powerfs.IsMounted(p.mnt))
		}
		time.Sleep(10 * time.Millisecond)
	}
	postmaster := p.PID
	lines := SweepClusters(tmp, self)
	t.Logf("%q", lines)
	if len(lines) != 1 || !strings.Contains(lines[0], "unmounted the stale mount "+p.mnt) || !strings.HasPrefix(lines[0], "cleaned up") {
		t.Errorf("the sweep said %q, want one line that cleaned up and unmounted %s", lines, p.mnt)
	}
	if serverRuns(postmaster) {
		t.Errorf("the postmaster %d still runs", postmaster)
	}
	leftBehind(t, tmp)
}

// serverRuns says whether pid is a live process, not a zombie.
func serverRuns(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && st.Live()
}

// TestPowerWalSyncMethod: every wal_sync_method Linux offers makes a
// commit durable before it returns, so under on/on/on a cut after the
// last ACK loses no row whichever the server uses. The open_* methods
// sync with O_DSYNC or O_SYNC writes, not fsync calls: the mount must see
// those as syncs too.
func TestPowerWalSyncMethod(t *testing.T) {
	needPower(t)
	for _, m := range []string{"fdatasync", "fsync", "open_datasync", "open_sync"} {
		t.Run(m, func(t *testing.T) {
			s := PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on", WalSyncMethod: m}
			acked, syncs, o := ackedTrial(t, PowerConfig{Settings: s, Params: powerfs.Params{Model: powerfs.ModelDrop}}, matrixRows)
			logOutcome(t, acked, syncs, o)
			for _, f := range matrixFailures(s, acked, syncs, o) {
				t.Error(f)
			}
		})
	}
}
