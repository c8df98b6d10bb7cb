package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"idemlab/experiments/powerlayer"
	"idemlab/worker/powerfs"
	"idemlab/worker/store"
)

// A power cluster is a throwaway cluster whose data folder lives on a
// power-loss filesystem (package powerfs), so a cut can leave the folder
// as a power failure would: what PostgreSQL wrote but never synced is
// gone (drop), kept (keep) or torn (torn). A server crash (crash.go)
// keeps the kernel's page cache and can never show that.
//
// Its folder holds, besides the socket, the server's log and the owner
// record: pgdata, the backing folder (the data folder as the disk holds
// it); data, the mount point, where the server runs until the cut; and
// store, the mount server's op log and undo file. After the cut the
// server restarts on pgdata itself, which the cut has rebuilt.

// powerBacking is the backing folder's name in a power cluster's folder.
const powerBacking = "pgdata"

// powerInitArgs are initdb's options for a power cluster: data checksums
// (-k), so a page a torn cut garbled is found when it is read. They key a
// template of their own.
var powerInitArgs = append(append([]string{}, initArgs...), "-k")

// PowerSettings are the durability settings a power trial's server runs
// with, "on" or "off" each; an empty value is the server's default.
type PowerSettings struct {
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
	FullPageWrites    string `json:"full_page_writes"`
	// WalSyncMethod is empty for the server's default (fdatasync on
	// Linux), or open_datasync, fsync, ...
	WalSyncMethod string `json:"wal_sync_method,omitempty"`
}

// PowerQuiet are the settings every power trial's server runs with, so
// that between Setup and the cut no process but the trial's own commits
// syncs the WAL: under synchronous_commit=off what a cut loses is then
// decided by these values, not by timing.
//
//   - wal_writer_delay=10s (its maximum) and wal_writer_flush_after=1GB:
//     the WAL writer flushes an asynchronous commit once wal_writer_delay
//     has passed since its last flush, or once that much WAL waits. Its
//     first flush after the start, though, comes at once (it has no last
//     flush yet), so Setup makes it flush once, and the trial then has
//     10 s in which the writer flushes nothing (PowerOutcome.QuietHeld).
//   - bgwriter_lru_maxpages=0: the background writer writes no page, and
//     so never flushes the WAL a page's write needs first.
//   - autovacuum=off, checkpoint_timeout=1d and max_wal_size=1GB: no
//     vacuum and no checkpoint start on their own.
var PowerQuiet = []string{"wal_writer_delay=10s", "wal_writer_flush_after=1GB", "bgwriter_lru_maxpages=0",
	"autovacuum=off", "checkpoint_timeout=1d", "max_wal_size=1GB"}

// quietFor is how long after Setup's flush the WAL writer flushes
// nothing: wal_writer_delay in PowerQuiet.
const quietFor = 10 * time.Second

// server lists s as "name=value" lines, PowerQuiet first.
func (s PowerSettings) server() []string {
	out := append([]string{}, PowerQuiet...)
	for _, kv := range [][2]string{{"fsync", s.Fsync}, {"synchronous_commit", s.SynchronousCommit},
		{"full_page_writes", s.FullPageWrites}, {"wal_sync_method", s.WalSyncMethod}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// started lists every "-c" setting a power cluster's server starts with:
// no TCP, a socket every user reaches, then server().
func (s PowerSettings) started() []string {
	return append([]string{"listen_addresses=", "unix_socket_permissions=0777"}, s.server()...)
}

// PowerConfig is one power trial's server and cut.
type PowerConfig struct {
	Settings PowerSettings
	// Params are the cut's models: drop, keep or torn, and the directory
	// model (strict POSIX when empty).
	powerfs.Params
	// CutSync, if not 0, freezes the mount at its CutSync-th sync, before
	// it reaches the disk or, with CutAfter, after; the syncs count from
	// the mount's start, the server's start among them (Syncs). 0 cuts on
	// the caller's word only (Cut). A cut that falls inside the server's
	// start fails StartPowerCluster.
	CutSync  int
	CutAfter bool
	// Exe is the binary that serves the mount, re-executed as "worker
	// powerfs.serve"; empty is the running binary.
	Exe string
}

// PowerCluster is a throwaway cluster on a power-loss mount.
type PowerCluster struct {
	*Cluster
	cfg                   PowerConfig
	mount                 *powerfs.Mount
	backing, mnt, storeAt string
	// primed is when Setup saw the WAL writer's flush.
	primed time.Time
	cut    bool
	// onMount is the postmaster started on the mount, the one the cut
	// ends; restarted the one Cut starts on the rebuilt folder
	// (restarted.go).
	onMount, restarted Postmaster
}

// Postmaster is a power cluster's postmaster on its mount, for its
// process line: its pid and command line, when its start began, and when
// the cut SIGKILLed it (zero before the cut).
type Postmaster struct {
	PID            int
	Argv           []string
	Started, Ended time.Time
}

// StartPowerCluster makes a cluster with data checksums in a new folder
// under tmp (the system default when empty), from a kept template when
// there is one, mounts its data folder on a power-loss filesystem, and
// starts the server on the mount. On any failure everything it started
// is stopped and unmounted and the folder removed.
func StartPowerCluster(ctx context.Context, tmp string, cfg PowerConfig) (p *PowerCluster, err error) {
	if why := powerfs.Missing(); why != "" {
		return nil, errors.New(why)
	}
	began := time.Now()
	c, uid, gid, self, err := newClusterDir(tmp)
	if err != nil {
		return nil, err
	}
	p = &PowerCluster{Cluster: c, cfg: cfg, backing: filepath.Join(c.Dir, powerBacking), mnt: c.data(), storeAt: filepath.Join(c.Dir, "store")}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close())
		}
	}()
	if err := writeOwner(c.Dir, self); err != nil {
		return p, err
	}
	if err := os.Chown(c.Dir, uid, gid); err != nil {
		return p, fmt.Errorf("give the cluster's folder to %s: %w", c.runAs, err)
	}
	if err := c.initData(ctx, p.backing, powerInitArgs, uid, gid); err != nil {
		return p, err
	}
	p.mount, err = powerfs.Start(ctx, cfg.Exe, powerfs.Config{Backing: p.backing, Mountpoint: p.mnt, Store: p.storeAt,
		Params: cfg.Params, CutSync: cfg.CutSync, CutAfter: cfg.CutAfter})
	if err != nil {
		return p, err
	}
	opts := []string{"-k", c.Dir}
	for _, s := range cfg.Settings.started() {
		opts = append(opts, "-c", s)
	}
	c.serverOpts = shellJoin(opts)
	p.onMount.Started = time.Now()
	started := make(chan error, 1)
	go func() { started <- c.start(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			return p, err
		}
	case ev := <-p.mount.Cuts():
		// The server froze in its own start: end it and pg_ctl (both work
		// in the folder) and the mount, and touch the cluster's fields only
		// once the start has returned.
		shm := shmIDIn(p.backing)
		pids := ClusterProcesses(c.Dir)
		dsm := dsmOf(pids)
		for _, q := range pids {
			_ = syscall.Kill(q, syscall.SIGKILL)
		}
		cerr := p.mount.Close()
		<-started
		p.cut, p.dataDir, p.stopped = true, p.backing, true
		return p, errors.Join(fmt.Errorf("the cut at sync %d fell inside the server's start: count the start's syncs (Syncs) and cut later", ev.Sync),
			cerr, p.waitGone(10*time.Second), removeSegment(shm), removeDSM(dsm))
	}
	c.StartedIn = time.Since(began)
	p.onMount.PID = c.PID
	p.onMount.Argv = cmdline(c.PID)
	return p, ctx.Err()
}

// cmdline is process pid's command line, from /proc; nil when it cannot be
// read.
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// OnMount is the postmaster that ran on the mount; its Ended is set once
// Cut has SIGKILLed it.
func (p *PowerCluster) OnMount() Postmaster { return p.onMount }

// DSN connects to the cluster's postgres database.
func (p *PowerCluster) DSN() string { return p.AdminDSN("postgres") }

// Frozen delivers the sync cut the cluster was configured with, when the
// server reaches it: its statements then block until the caller's Cut.
func (p *PowerCluster) Frozen() <-chan powerfs.CutEvent { return p.mount.Cuts() }

// MountTook is how long the mount took.
func (p *PowerCluster) MountTook() time.Duration { return p.mount.MountTook }

// Syncs counts the syncs of the mount so far, from the op log.
func (p *PowerCluster) Syncs() (int, error) {
	log, err := powerfs.ReadLogFile(p.storeAt)
	n := 0
	for _, op := range log {
		if op.Sync > n && op.Kind != powerfs.OpCut {
			n = op.Sync
		}
	}
	return n, err
}

// Setup runs ddl in one transaction whose commit waits for the WAL's
// flush whatever synchronous_commit says, then has the WAL writer make its
// first flush (PowerQuiet) and waits for it: from then on, for 10 s, only
// a commit under synchronous_commit=on syncs the WAL.
func (p *PowerCluster) Setup(ctx context.Context, ddl string) error {
	db, err := sql.Open("pgx", p.DSN())
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN; SET LOCAL synchronous_commit = on; "+ddl+"; COMMIT"); err != nil {
		return fmt.Errorf("set up the power trial: %w", err)
	}
	// An asynchronous commit of a record longer than a WAL page wakes the
	// writer, which flushes at once, as its first flush: up to the last
	// page boundary, inside the record, past the flush before it.
	var lsn string
	if err := conn.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&lsn); err != nil {
		return fmt.Errorf("read the WAL's flush: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "SET synchronous_commit = off"); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_logical_emit_message(true, 'idemlab', repeat('x', 10000))"); err != nil {
		return fmt.Errorf("wake the WAL writer: %w", err)
	}
	deadline := time.Now().Add(2 * quietFor)
	for {
		var flushed bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn() > $1::pg_lsn", lsn).Scan(&flushed); err != nil {
			return fmt.Errorf("read the WAL's flush: %w", err)
		}
		if flushed {
			p.primed = time.Now()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the WAL writer did not flush past %s in %v", lsn, 2*quietFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// PowerOutcome is what one power cut did: the filesystem's side (what the
// cut left, and the op log it was planned from, from which powerfs.Plan
// derives it again for a fold), and the server's, after WAL recovery on
// the rebuilt folder.
type PowerOutcome struct {
	Settings PowerSettings   `json:"settings"`
	Quiet    []string        `json:"quiet"`
	Cut      powerfs.Outcome `json:"cut"`
	Log      []powerfs.Op    `json:"log"`
	// QuietHeld says the cut came within wal_writer_delay of Setup's
	// flush, so that no WAL writer flush fell inside the trial; false
	// without Setup.
	QuietHeld bool `json:"quiet_held"`
	// Started says the server started on the rebuilt folder; when it did
	// not, StartLog holds its log from the restart.
	Started  bool     `json:"started"`
	StartLog []string `json:"start_log,omitempty"`
	// Rows is the caller's query's first column, a row each; RowsErr its
	// error.
	Rows    []string `json:"rows"`
	RowsErr string   `json:"rows_err,omitempty"`
	// Indexes counts the B-tree indexes amcheck's bt_index_check checked;
	// Amcheck lists "index: error" for each it rejected, or the error that
	// stopped the check.
	Indexes int      `json:"indexes"`
	Amcheck []string `json:"amcheck,omitempty"`
	// ChecksumFailures is pg_stat_database's sum after the checks; Rejected
	// the server log's "page verification failed" lines since the restart.
	ChecksumFailures int64    `json:"checksum_failures"`
	Rejected         []string `json:"rejected,omitempty"`
	// DataChecksums is what the recovered server says of data_checksums:
	// "on" for a cluster made with initdb -k, without which no page is
	// checked and ChecksumFailures is 0 whatever the cut tore; "" where it
	// could not be read, and in folders made before it was recorded
	// (results.FormatPowerEvidence).
	DataChecksums string `json:"data_checksums,omitempty"`
	// ServerProcessID is the line of raw-processes.jsonl that records the
	// postmaster the cut SIGKILLed on the mount (PowerTrial); 0 in folders
	// made before it was recorded.
	ServerProcessID int `json:"server_process_id,omitempty"`
	// RestartedProcessID is the line of raw-processes.jsonl that records
	// the postmaster the cut restarted on the rebuilt folder, which the
	// harness stopped once the trial had read what it needed
	// (PowerTrial.Finish); 0 when the server did not start again, and in
	// folders made before it was recorded.
	RestartedProcessID int `json:"restarted_process_id,omitempty"`
	// MountServerProcessID is the line of raw-processes.jsonl that
	// records the power-loss mount's server, which made the cut of the
	// cluster's data folder; 0 in folders made before it was recorded.
	MountServerProcessID int `json:"mount_server_process_id,omitempty"`
	// CutTook is the kill and the rebuild, RestartTook the server's start
	// with its recovery, CheckTook the query and the checks.
	CutTook, RestartTook, CheckTook time.Duration
}

// Corrupt says whether the checks found damage: amcheck or a checksum.
func (o PowerOutcome) Corrupt() bool {
	return len(o.Amcheck) > 0 || o.ChecksumFailures > 0 || len(o.Rejected) > 0
}

// Cut is the power cut: it SIGKILLs the postmaster's whole process group
// and every process on the mount, cuts the mount under the configured
// model (powerfs.Mount.Cut), restarts the server on the rebuilt folder,
// which runs WAL recovery, and reports what survived: query's rows
// (database postgres), amcheck over every B-tree index and the checksum
// failures. The recovered server runs on until Close, which stops it and
// removes the folder. A server that does not start is the outcome's
// (Started, StartLog), not an error.
func (p *PowerCluster) Cut(ctx context.Context, query string) (PowerOutcome, error) {
	o := PowerOutcome{Settings: p.cfg.Settings, Quiet: PowerQuiet}
	if p.cut {
		return o, errors.New("the power cluster was cut already")
	}
	p.cut = true
	o.QuietHeld = !p.primed.IsZero() && time.Since(p.primed) < quietFor
	t0 := time.Now()
	pid := p.PID
	if err := p.killOnMount(func() error {
		p.onMount.Ended = time.Now()
		var err error
		o.Cut, err = p.mount.Cut(pid)
		return err
	}); err != nil {
		return o, fmt.Errorf("cut the mount: %w", err)
	}
	var err error
	if o.Log, err = powerfs.ReadLogFile(p.storeAt); err != nil {
		return o, fmt.Errorf("read the cut's op log: %w", err)
	}
	// The rebuilt folder may keep the dead server's pid file (keep, or a
	// synced one), and the socket's lock file is off the mount; their pid,
	// a zombie not yet reaped, would make the start refuse them. Every
	// server process is gone, so both are stale, as after a reboot.
	for _, f := range []string{filepath.Join(p.data(), "postmaster.pid"), filepath.Join(p.Dir, ".s.PGSQL.5432.lock")} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return o, fmt.Errorf("remove the dead server's lock file: %w", err)
		}
	}
	o.CutTook = time.Since(t0)
	logPath := filepath.Join(p.Dir, "server.log")
	from := int64(0)
	if st, err := os.Stat(logPath); err == nil {
		from = st.Size()
	}
	t1 := time.Now()
	startErr := p.start(ctx)
	o.RestartTook = time.Since(t1)
	since := func() string {
		b, _ := os.ReadFile(logPath)
		if int64(len(b)) < from {
			return ""
		}
		return string(b[from:])
	}
	if startErr != nil {
		o.StartLog = strings.Split(strings.TrimSpace(since()), "\n")
		o.Rejected = rejectedPages(o.StartLog)
		p.stopped = true
		// A start that failed half-way may leave processes behind.
		pids := ClusterProcesses(p.Dir)
		dsm := dsmOf(pids)
		for _, q := range pids {
			_ = syscall.Kill(q, syscall.SIGKILL)
		}
		return o, errors.Join(ctx.Err(), p.waitGone(10*time.Second), p.removeSharedMemory(), removeDSM(dsm))
	}
	o.Started = true
	p.restarted = Postmaster{PID: p.PID, Argv: cmdline(p.PID), Started: t1}
	t2 := time.Now()
	err = p.check(ctx, query, &o)
	o.CheckTook = time.Since(t2)
	o.Rejected = rejectedPages(strings.Split(since(), "\n"))
	return o, errors.Join(err, ctx.Err())
}

// check runs the caller's query, amcheck and the checksum count on the
// recovered server. What the server rejects is the outcome's; only a
// failure to connect is an error.
func (p *PowerCluster) check(ctx context.Context, query string, o *PowerOutcome) error {
	db, err := sql.Open("pgx", p.DSN())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connect to the recovered server: %w", err)
	}
	o.Rows = []string{}
	if err := scanColumn(ctx, db, query, &o.Rows); err != nil {
		o.RowsErr = err.Error()
	}
	if _, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS amcheck"); err != nil {
		o.Amcheck = append(o.Amcheck, "create extension amcheck: "+err.Error())
	} else {
		var idx []string
		err := scanColumn(ctx, db, `SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'btree' AND c.relpersistence <> 't' AND i.indisready AND i.indisvalid ORDER BY 1`, &idx)
		if err != nil {
			o.Amcheck = append(o.Amcheck, "list the indexes: "+err.Error())
		}
		for _, ix := range idx {
			if _, err := db.ExecContext(ctx, "SELECT bt_index_check($1::regclass)", ix); err != nil {
				o.Amcheck = append(o.Amcheck, ix+": "+err.Error())
			}
			o.Indexes++
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT coalesce(sum(checksum_failures), 0) FROM pg_stat_database").Scan(&o.ChecksumFailures); err != nil {
		o.Amcheck = append(o.Amcheck, "read checksum_failures: "+err.Error())
	}
	if err := db.QueryRowContext(ctx, "SHOW data_checksums").Scan(&o.DataChecksums); err != nil {
		o.Amcheck = append(o.Amcheck, "read data_checksums: "+err.Error())
	}
	return nil
}

// scanColumn appends query's first column, as text, to out.
func scanColumn(ctx context.Context, db *sql.DB, query string, out *[]string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			return err
		}
		*out = append(*out, v.String)
	}
	return rows.Err()
}

// rejectedPages picks the server log's lines that say a page's checksum
// was wrong.
func rejectedPages(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "page verification failed") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// killOnMount SIGKILLs every server process, then ends the mount with end
// (a cut or an unmount: a process blocked in a request of a frozen mount
// dies only once the mount's server lets it go), waits until they are
// gone and removes their shared memory, whose id it reads from the
// backing folder before, since a cut may drop the pid file. The server
// then runs on the backing folder, if it runs again.
func (p *PowerCluster) killOnMount(end func() error) error {
	shm := shmIDIn(p.backing)
	pids := ClusterProcesses(p.Dir)
	dsm := dsmOf(pids)
	for _, q := range pids {
		_ = syscall.Kill(q, syscall.SIGKILL)
	}
	err := end()
	p.dataDir = p.backing
	p.stopped = true
	return errors.Join(err, p.waitGone(10*time.Second), removeSegment(shm), removeDSM(dsm))
}

// Close stops the server, unmounts a mount that was not cut and removes
// the folder. It is safe on a cluster whose start failed half-way, and
// after Cut.
func (p *PowerCluster) Close() error {
	if p == nil || p.Cluster == nil {
		return nil
	}
	var errs []error
	if p.mount != nil && !p.cut {
		p.cut = true
		errs = append(errs, p.killOnMount(p.mount.Close))
	}
	// A cut that failed half-way may have left the mount: never remove
	// the folder through it.
	errs = append(errs, powerfs.Detach(p.mnt), p.Stop())
	return errors.Join(errs...)
}

// Database is a schema on the power cluster's postgres database as a
// condition's workers open it: sessions start with spec's settings and
// schema as their search_path. SetupIn makes the schema.
func (p *PowerCluster) Database(spec Spec, schema string) Database {
	sess := spec.Session(p.DSN(), schema)
	return Database{Backend: store.BackendPostgres, Target: sess.DSN(), Session: &sess}
}

// SetupIn is Setup of ddl inside a new schema, which its statements find
// on their search_path.
func (p *PowerCluster) SetupIn(ctx context.Context, schema, ddl string) error {
	return p.Setup(ctx, "CREATE SCHEMA "+schema+"; SET LOCAL search_path TO "+schema+"; "+ddl)
}

// ReadBackQuery lists, "name=value" a row in name order, the durability
// settings a power trial's server runs with, as the recovered server reads
// them back: Cut's query for a caller that records them.
const ReadBackQuery = `SELECT name || '=' || setting FROM pg_settings
	WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'wal_writer_delay') ORDER BY name`

// ReadBack is what ReadBackQuery gives on a server that runs with s:
// wal_writer_delay as PowerQuiet sets it, in the server's unit (ms), and
// wal_sync_method as s names it, or Linux's default, fdatasync.
func (s PowerSettings) ReadBack() []string {
	method := s.WalSyncMethod
	if method == "" {
		method = "fdatasync"
	}
	def := func(v string) string {
		if v == "" {
			return "on"
		}
		return v
	}
	return []string{"fsync=" + def(s.Fsync), "full_page_writes=" + def(s.FullPageWrites),
		"synchronous_commit=" + def(s.SynchronousCommit), "wal_sync_method=" + method,
		fmt.Sprintf("wal_writer_delay=%d", quietFor.Milliseconds())}
}

// PowerTemp is where a run's power clusters go: beside the run's own
// throwaway cluster, a folder its server's OS user reaches, or else
// fallback (the run's temp folder) on a server named by --dsn or none.
func (s *Server) PowerTemp(fallback string) string {
	if s != nil && s.cluster != nil {
		return filepath.Dir(s.cluster.Dir)
	}
	return fallback
}

// Mismatch is one field of a power trial's record that disagrees with
// what the trial was to be: Field as the record names it.
type Mismatch struct{ Field, Text string }

// Check lists where power trial record o disagrees with the server
// settings want and the cut's models p: a recorded setting (settings.fsync,
// …), what the recovered server read back (rows), the models the cut was
// made under (cut), and the cut itself, which powerfs.Plan derives again
// from the op log (cut.entries, cut.files[0]…). Every fold of a power
// trial on PostgreSQL checks its record with it.
func (o PowerOutcome) Check(want PowerSettings, p powerfs.Params) []Mismatch {
	var out []Mismatch
	for _, s := range []struct{ field, got, want string }{
		{"fsync", o.Settings.Fsync, want.Fsync}, {"synchronous_commit", o.Settings.SynchronousCommit, want.SynchronousCommit},
		{"full_page_writes", o.Settings.FullPageWrites, want.FullPageWrites}, {"wal_sync_method", o.Settings.WalSyncMethod, want.WalSyncMethod},
	} {
		if s.got != s.want {
			out = append(out, Mismatch{"settings." + s.field, fmt.Sprintf("%q, but the condition runs with %q", s.got, s.want)})
		}
	}
	if o.Started && o.RowsErr == "" && !slices.Equal(o.Rows, want.ReadBack()) {
		out = append(out, Mismatch{"rows", fmt.Sprintf("the recovered server read back %v, the condition runs with %v", o.Rows, want.ReadBack())})
	}
	if got := (powerfs.Params{Model: o.Cut.Model, DirModel: o.Cut.DirModel, Seed: o.Cut.Seed, Unit: o.Cut.Unit}); got != p {
		return append(out, Mismatch{"cut." + got.Differs(p), fmt.Sprintf("made under %+v, but the trial cuts under %+v", got, p)})
	}
	if field, text := powerlayer.Check(powerlayer.Record{Params: p, Log: o.Log, Outcome: o.Cut}); field != "" {
		out = append(out, Mismatch{"cut." + strings.TrimPrefix(field, "outcome."), text})
	}
	return out
}
