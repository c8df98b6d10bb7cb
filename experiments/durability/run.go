package durability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/fstree"
	"idemlab/experiments/harness"
	"idemlab/experiments/owner"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

type plan struct{ s Settings }

func (p *plan) Settings() any { return p.s }

// Processes counts the most processes each trial may start: two per
// redelivery trial; delivery, probe and re-claim for the claim; run,
// resume and last run for the batch, and a resolve where the sync model
// says the file the resume opens may hold a notify IN_FLIGHT. The sync
// points are the model's; a run that found other ones fails its check.
func (p *plan) Processes() int {
	n := 0
	for _, c := range p.s.Conditions {
		order, err := p.s.ModelOrder(c)
		if err != nil {
			continue
		}
		for _, tr := range p.s.share(c, order, p.s.Shard.Runs) {
			switch c.Pattern {
			case PatternBatch:
				n += 3
				if held, err := p.s.mayHold(c, tr.Point); err == nil && held {
					n++
				}
			case PatternClaim:
				n += 3
			default:
				n += 2
			}
		}
	}
	return n
}

// mayHold says whether the journal the batch's resume opens may hold a
// notify IN_FLIGHT: the sync model's answer on SQLite, the server's on
// PostgreSQL.
func (s Settings) mayHold(c Condition, point string) (bool, error) {
	if c.OnServer() {
		return mayHoldOnServer(c, s.Items, point)
	}
	return MayHoldSend(c.Pattern, s.modelOf(c), s.Items, point, s.faultOf(c))
}

// Caps: on SQLite through the fault VFS, the conditions side by side,
// as many as ParallelOf (the input has no parallel of its own); each
// trial has its own folder and file, and its cut is made by the seed and
// the point, not by timing. One condition's trials still run one after
// another, in the order the fold checks (the normal run discovers the
// points the rest follow). One at a time where a trial holds what the
// others share: a condition on the PostgreSQL server (a server crash
// freezes the server's writers and takes it down under every other
// session), and a cut in the power-loss filesystem, whose FUSE mount and
// server each trial starts and stops, and which has only ever been
// measured one at a time (Bound 1). It needs nothing before the run.
func (p *plan) Caps() scenario.PlanCaps {
	caps := scenario.PlanCaps{SideBySide: true}
	if slices.ContainsFunc(p.s.Conditions, func(c Condition) bool { return c.OnServer() || p.s.OnFS(c) }) {
		caps.Bound = 1
	}
	return caps
}

// Run runs each condition through the engine, one trial at a time: the
// normal run first, whose report names the crash points and whose log
// counts the syncs, then the condition's sweep (Settings.sweep); as many
// conditions at once as the slots allow (Caps). A run with server
// crashes first sets backend.CrashSettings on the cluster.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	if len(p.s.ServerSettings) > 0 {
		if env.Backend == nil {
			return fmt.Errorf("%w: the settings crash a PostgreSQL server, but the run has none", errclass.ErrHarness)
		}
		if err := env.Backend.Apply(ctx, p.s.ServerSettings); err != nil {
			return err
		}
	}
	if p.s.PowerLayer == engine.LayerFS || slices.ContainsFunc(p.s.Conditions, Condition.pgPower) {
		if err := powerlayer.Sweep(os.Stderr); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	}
	// A run SIGKILLed leaves its scratch folders and its mounts' points
	// and stores; those whose recorded owner is gone go now, the stale
	// mounts in them cleared first (above, or by the run that needs
	// them).
	for _, l := range owner.SweepTemp(env.TempDir, ScratchPrefix, powerlayer.MountPrefix, powerlayer.StorePrefix) {
		fmt.Fprintln(os.Stderr, "idemlab: "+l)
	}
	var conditions []func(context.Context) error
	for _, c := range p.s.Conditions {
		sw := p.s.sweep(c)
		class, _ := engine.KindOf(engine.Durability, c.Kind)
		u := engine.Unit{Subject: condSubject{p: p, env: env, c: c}, Discovery: c.Name,
			Sets: []engine.Set{{Class: class, Condition: c.Name, Sweep: &sw}}}
		conditions = append(conditions, func(ctx context.Context) error {
			_, err := engine.Run{Parallel: 1, Shard: p.s.Shard, Units: []engine.Unit{u}}.Execute(ctx)
			return err
		})
	}
	return harness.RunJobs(ctx, env.SlotsOf(p.Caps().Slots(0)).N(), conditions)
}

// condSubject is one condition's trials as the engine delivers them: the
// discovery is the normal run, seed 0.
type condSubject struct {
	p   *plan
	env scenario.Env
	c   Condition
}

func (s condSubject) Deliver(ctx context.Context, et engine.Trial) (engine.Found, error) {
	tr, key := TrialRef{Point: PointACK}, PointACK
	if et.Class != engine.None {
		tr, key = TrialRef{Point: et.Point, Seed: et.Seed}, et.Key
		if (et.Layer == engine.LayerFS) != s.p.s.cutOnFS(s.c) {
			return engine.Found{}, fmt.Errorf("%w: %s %s: the engine planned the power layer %q, the settings %q", errclass.ErrHarness, s.c.Name, key, et.Layer, s.p.s.PowerLayer)
		}
	}
	points, w, err := s.p.trial(ctx, s.env, s.c, tr)
	if err != nil {
		return engine.Found{}, fmt.Errorf("%s %s: %w", s.c.Name, key, err)
	}
	w = w.Bounded(s.p.s.SyncBound)
	return engine.Found{Points: points, SyncsFrom: w.From, Syncs: w.To}, nil
}

// Env is the environment of every process of a trial; the first process
// also gets the crash kind and, unless it is the normal run, the point.
// On PostgreSQL there is no file to open through the fault VFS.
func Env(c Condition) map[string]string {
	if c.OnServer() {
		return map[string]string{}
	}
	return map[string]string{protocol.EnvVFS: protocol.VFSFault, protocol.EnvJournalMode: c.JournalMode, protocol.EnvSynchronous: c.Synchronous}
}

// FirstEnv is the first process's environment: the crash kind, and what
// stops it: a crash point, a cut inside a sync, or an ACK with the
// connection open. The normal run and the ACK with the parent's reader
// open run to their exit.
func FirstEnv(c Condition, point string) map[string]string {
	e := Env(c)
	e[protocol.EnvCrashKind] = WorkerKind(c)
	cut, isSync := ParseSyncPoint(point)
	switch {
	case point == PointACK, point == PointACKReader:
	case point == PointACKOpen:
		e[protocol.EnvAckOpen] = "1"
	case isSync:
		if !c.OnServer() { // on PostgreSQL the mount freezes the server
			e[protocol.EnvCutAtSync] = cut.String()
		}
	default:
		e[protocol.EnvCrashAt] = point
	}
	return e
}

// WorkerKind is the crash kind the first process is told, and echoes: a
// server crash stops the worker as a kill does, and then crashes the
// server as well.
func WorkerKind(c Condition) string {
	if c.Kind == KindServer || c.pgPower() {
		return KindKill
	}
	return c.Kind
}

// DBOptions is how the parent opens a trial's file: the condition's
// settings, the default VFS.
func DBOptions(c Condition, path string) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: c.JournalMode, Synchronous: c.Synchronous, BusyTimeout: busyTimeoutMS * time.Millisecond}
}

type trial struct {
	p   *plan
	env scenario.Env
	c   Condition
	// dir is the trial's folder and db its file on SQLite; on PostgreSQL
	// pg is the trial's schema and db its connection string.
	dir string
	db  string
	pg  *backend.Database
	o   Observation
	rcv *receiver.Receiver
	cl  *wire.Client
	ctx context.Context
	// seed is the index of the trial's seed under the torn mode; point
	// is the trial's.
	seed  int
	point string
	// fs is the trial's mount on the fs power layer, nil otherwise; held
	// is the parent's reader on it at PointACKReader, closed after the cut.
	fs   *powerlayer.Trial
	held *heldReader
	// frozenWait waits for a first process the mount froze at a sync,
	// once the cut has ended its request (runToFreeze).
	frozenWait func() error
	// pc is a PostgreSQL power trial's own cluster, on its mount.
	pc *backend.PowerTrial
	// window is, on the normal run of a condition that sweeps its
	// mount's fsyncs, the window it counts (backend.PowerTrial.StartWindow).
	window *backend.SyncWindow
}

// trial runs one trial and returns the points its first process passed
// and the window of syncs it made (syncWindow): on a fresh database, the
// first process to its point or its ACK, the cut or the crash, the
// processes that follow, and the rows at the end.
func (p *plan) trial(ctx context.Context, env scenario.Env, c Condition, tr TrialRef) ([]string, backend.SyncWindow, error) {
	t := &trial{p: p, env: env, c: c, ctx: ctx, seed: tr.Seed, point: tr.Point}
	drop, err := t.open()
	if err != nil {
		return nil, backend.SyncWindow{}, err
	}
	defer drop()
	t.o = Observation{Scenario: Name, Condition: c.Name, Point: tr.Point, DB: t.db, Steps: []Step{}, SyncWindow: t.window}
	if p.s.Torn() && c.Kind == KindPower {
		t.o.Seed = &t.seed
	}
	stop, err := t.startReceiver()
	if err != nil {
		return nil, backend.SyncWindow{}, err
	}
	defer stop()
	if p.s.OnFS(c) {
		cut, _ := p.s.fsSyncCut(c, tr.Point)
		if t.fs, err = powerlayer.StartCut(ctx, env.Runner.Executable, t.dir, env.TempDir, p.s.fsParams(tr.Seed), cut.N, cut.After); err != nil {
			return nil, backend.SyncWindow{}, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.fs.RecordTo(powerlayer.Recording{Recorder: env.Recorder, Scenario: Name, Condition: c.Name, Label: tr.Point})
		defer t.fs.Close()
		defer func() {
			if t.held != nil {
				_ = t.held.db.Close()
			}
		}()
		t.o.FS = &powerlayer.MountCut{Mount: t.fs.Mount()}
	}
	first, err := t.first(tr.Point)
	if err != nil {
		return nil, backend.SyncWindow{}, err
	}
	if w := t.o.SyncWindow; w != nil {
		if err := t.pc.EndWindow(w); err != nil {
			return nil, backend.SyncWindow{}, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	}
	if err := t.cut(); err != nil {
		return nil, backend.SyncWindow{}, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if err := t.rest(); err != nil {
		return nil, backend.SyncWindow{}, err
	}
	if t.o.Final, _, err = t.readOrNote(t.dir, false); err != nil {
		return nil, backend.SyncWindow{}, fmt.Errorf("%w: read the rows at the end: %w", errclass.ErrHarness, err)
	}
	if t.rcv != nil {
		t.o.Sends, _ = t.rcv.LogSince(0)
	}
	if t.pc != nil && t.o.PGPower != nil {
		if err := t.pc.Finish(t.o.PGPower); err != nil {
			return nil, backend.SyncWindow{}, fmt.Errorf("%w: stop the restarted server: %w", errclass.ErrHarness, err)
		}
	}
	if err := engine.Record(env.Recorder, t.o); err != nil {
		return nil, backend.SyncWindow{}, err
	}
	return first.Report.Points, t.o.syncWindow(), nil
}

// ScratchPrefix starts the name of every scratch folder of a durability
// trial, each made with its owner's record (owner.MkdirTemp).
const ScratchPrefix = "idemlab-durability-"

// open makes the trial's database with the pattern's tables and nothing
// else, and returns what drops it. On SQLite it is a fresh folder, its
// file declared durable (prepare). On PostgreSQL it is a schema of its
// own whose sessions carry the condition's synchronous_commit, its tables
// made and flushed by the parent, and for a server crash the server's
// writers frozen (backend.Server.FreshTrial).
func (t *trial) open() (func(), error) {
	if !t.c.OnServer() {
		dir, err := owner.MkdirTemp(t.env.TempDir, ScratchPrefix)
		if err != nil {
			return nil, fmt.Errorf("%w: create trial folder: %w", errclass.ErrHarness, err)
		}
		t.dir, t.db = dir, filepath.Join(dir, DBName(t.c.Pattern))
		drop := func() { _ = owner.RemoveAll(dir) }
		if err := t.prepare(); err != nil {
			drop()
			return nil, fmt.Errorf("%w: prepare: %w", errclass.ErrHarness, err)
		}
		return drop, nil
	}
	if t.c.pgPower() {
		return t.openPower()
	}
	if t.env.Backend == nil {
		return nil, fmt.Errorf("%w: a PostgreSQL condition, but the run has no server", errclass.ErrHarness)
	}
	ddl, err := Schema(t.c.Pattern, store.Postgres{})
	if err != nil {
		return nil, fmt.Errorf("%w: prepare: %w", errclass.ErrHarness, err)
	}
	db, err := t.env.Backend.FreshTrial(t.ctx, t.p.s.spec(t.c), "idemlab-durability", ddl, t.c.Kind == KindServer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	t.pg, t.db = &db, db.Target
	return func() { db.Drop() }, nil
}

// openPower starts a PostgreSQL power trial (backend.PowerTrial) with the
// condition's server settings and cut, and the pattern's tables in a
// schema of their own.
func (t *trial) openPower() (func(), error) {
	ddl, err := Schema(t.c.Pattern, store.Postgres{})
	if err != nil {
		return nil, fmt.Errorf("%w: prepare: %w", errclass.ErrHarness, err)
	}
	cfg := backend.PowerConfig{Settings: t.p.s.powerSettings(t.c), Params: t.p.s.pgParams(t.c)}
	cfg.CutSync, cfg.CutAfter = t.p.s.cutAt(t.c, t.point)
	rec := powerlayer.Recording{Recorder: t.env.Recorder, Scenario: Name, Condition: t.c.Name, Label: t.point}
	pt, err := t.env.Backend.StartPowerTrial(t.ctx, t.env.TempDir, cfg, t.p.s.spec(t.c), pgSchema, ddl, rec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	t.pc, t.pg, t.db = pt, &pt.DB, pt.DB.Target
	if t.point == PointACK && t.p.s.pgSweeps(t.c) {
		if t.window, err = pt.StartWindow(); err != nil {
			_ = pt.Close()
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	}
	return func() { _ = pt.Close() }, nil
}

// cutPower reads what the first process left, cuts the power, which
// restarts the server on the rebuilt folder, and reads what recovery
// kept, with amcheck: a server that did not start, or tables the cut
// took, are the outcome's, not a harness fault.
func (t *trial) cutPower() error {
	var err error
	if t.p.s.pgFrozen(t.c, t.point) {
		// The server waits in the frozen fsync: the parent reads nothing
		// before the cut.
		t.o.Before = Rows{}
	} else if t.o.Before, _, err = t.read("", false); err != nil {
		return fmt.Errorf("read the rows the first process left: %w", err)
	}
	o, err := t.pc.Cut(t.ctx)
	if t.frozenWait != nil {
		err = errors.Join(err, t.frozenWait())
	}
	if err != nil {
		return err
	}
	t.o.PGPower = &o
	t.o.After, t.o.Integrity, _ = t.readOrNote("", true)
	return nil
}

// startReceiver starts a batch trial's receiver and its client, and
// returns what stops them; other patterns have none.
func (t *trial) startReceiver() (stop func(), err error) {
	if t.c.Pattern != PatternBatch {
		return func() {}, nil
	}
	if t.rcv, err = receiver.Start(receiver.Config{}); err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	t.cl = wire.NewClient(t.rcv.URL)
	t.o.Receiver = t.rcv.URL
	return func() { t.cl.CloseIdle(); t.rcv.Close() }, nil
}

// first runs the trial's first process. For PointACKReader the parent
// holds a read connection open meanwhile, so the worker's close is not the
// last one; see holdReader for how it then lets go without a close of its
// own changing the files.
func (t *trial) first(point string) (*harness.Proc, error) {
	var reader *heldReader
	if point == PointACKReader {
		var err error
		if reader, err = t.holdReader(); err != nil {
			return nil, fmt.Errorf("%w: hold a reader: %w", errclass.ErrHarness, err)
		}
	}
	proc, err := t.spawn(RoleFirst, t.p.s.firstEnv(t.c, point), []int{protocol.ExitACK, protocol.ExitCrash}, nil)
	if reader != nil && t.fs != nil {
		// On the mount the reader stays open through the cut, as the
		// service's other connection would, and closes on the dead mount.
		t.held = reader
		return proc, err
	}
	if reader != nil {
		if rerr := reader.release(); rerr != nil && err == nil {
			err = fmt.Errorf("%w: release the reader: %w", errclass.ErrHarness, rerr)
		}
	}
	return proc, err
}

// prepare creates the file and its tables (Schema) with the default VFS
// and no connection left open, then declares the folder durable. The
// claim's worker would create its table too; made here, the table is part
// of the baseline and the delivery's only commits are the claim's.
func (t *trial) prepare() error {
	ddl, err := Schema(t.c.Pattern, store.SQLite{})
	if err != nil {
		return err
	}
	db, _, err := sqlitedb.Open(t.ctx, DBOptions(t.c, t.db))
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(t.ctx, ddl); err != nil {
		db.Close()
		return fmt.Errorf("create tables: %w", err)
	}
	if err := db.Close(); err != nil {
		return err
	}
	return faultvfs.Baseline(t.dir)
}

func (t *trial) spawn(role string, env map[string]string, exits []int, lk *wb.Lookup) (*harness.Proc, error) {
	step := Step{Role: role, Lookup: lk}
	w, args := ProcessArgs(t.p.s, t.c, t.o, step)
	crashAt := env[protocol.EnvCrashAt]
	delete(env, protocol.EnvCrashAt)
	spec := harness.Spec{
		Scenario: Name, Condition: t.c.Name, Label: t.o.Point + " " + role,
		Worker: w, Args: args, Env: env, CrashAt: crashAt, Exits: exits,
	}
	if _, cut := t.p.s.mountSyncCut(t.c, t.o.Point); cut && role == RoleFirst {
		return t.runToFreeze(spec, step)
	}
	proc, err := t.env.Runner.Run(t.ctx, spec)
	return t.took(step, proc, err)
}

// took records step, which ran as proc, unless running it failed.
func (t *trial) took(step Step, proc *harness.Proc, err error) (*harness.Proc, error) {
	if err != nil {
		return nil, err
	}
	step.ProcessID = proc.Record.ID
	t.o.Steps = append(t.o.Steps, step)
	return proc, nil
}

// runToFreeze runs the first process of a cut at the mount's N-th fsync.
// A process that ends first made fewer fsyncs; the cut then falls after
// it, which the fold finds in the cut's record. When the mount freezes,
// the process waits in that fsync, and no signal ends a FUSE request the
// server has read: the harness sends its SIGKILL (harness.RunUntil) and
// leaves the wait to the cut (frozenWait), whose unmount ends the request.
// It returns an empty Proc then: the first process of a sync cut reports
// nothing.
func (t *trial) runToFreeze(spec harness.Spec, step Step) (*harness.Proc, error) {
	proc, wait, err := harness.RunUntil(t.ctx, t.env.Runner, spec, t.frozen())
	if wait == nil {
		return t.took(step, proc, err)
	}
	t.frozenWait = func() error {
		p, err := wait()
		_, err = t.took(step, p, err)
		return err
	}
	return &harness.Proc{}, nil
}

// cut reads what a kill leaves, then what the next process finds, with
// the integrity check. On SQLite it keeps the VFS's op log, reads the
// rows a kill leaves from a copy of the folder, recovers the folder to
// what the disk held under the settings' fault mode for a power cut, and
// baselines it afterwards, since the parent's own reads changed it
// outside the VFS. On PostgreSQL a server crash crashes the server, lets
// it recover and reads the crash settings back, and records the rows the
// crash took.
func (t *trial) cut() error {
	var err error
	if t.pc != nil {
		return t.cutPower()
	}
	if t.pg != nil {
		if t.o.Before, _, err = t.read("", false); err != nil {
			return fmt.Errorf("read the rows the first process left: %w", err)
		}
		if t.c.Kind == KindServer {
			settings, err := t.env.Backend.CrashAndRecover(t.ctx, t.p.s.ServerSettings)
			if err != nil {
				return err
			}
			t.o.Server = &ServerCrash{Frozen: true, Settings: settings}
		}
		if t.o.After, t.o.Integrity, err = t.read("", true); err != nil {
			return fmt.Errorf("read the rows after the crash: %w", err)
		}
		if t.o.Server != nil {
			t.o.Server.Lost = LostRows(t.o.Before, t.o.After)
		}
		return nil
	}
	if t.o.Log, err = faultvfs.ReadLog(t.dir); err != nil {
		return err
	}
	cp, err := owner.MkdirTemp(t.env.TempDir, ScratchPrefix+"copy-")
	if err != nil {
		return err
	}
	defer owner.RemoveAll(cp)
	// The folder's regular files but the WAL index, which SQLite rebuilds;
	// faultvfs's sidecar, which only the VFS reads, is a folder.
	if err := fstree.CopyFiles(t.dir, cp, func(name string) bool { return strings.HasSuffix(name, "-shm") }); err != nil {
		return fmt.Errorf("copy the folder: %w", err)
	}
	if t.o.Before, _, err = t.read(cp, false); err != nil {
		return fmt.Errorf("read the rows a kill leaves: %w", err)
	}
	if t.fs != nil {
		t.o.FS.Record, err = t.fs.Cut()
		if t.held != nil {
			_ = t.held.db.Close() // its file is gone with the mount
		}
		if t.frozenWait != nil {
			err = errors.Join(err, t.frozenWait())
		}
		if err != nil {
			return err
		}
	} else if t.c.Kind == KindPower {
		rep, err := faultvfs.RecoverWith(t.dir, t.p.s.FaultOptions(t.seed))
		if err != nil {
			return err
		}
		rep.Log = nil // the observation's Log is the same
		t.o.Recovery = &rep
	}
	t.o.After, t.o.Integrity, _ = t.readOrNote(t.dir, true)
	return faultvfs.Baseline(t.dir)
}

// readOrNote reads like read. On SQLite a file a torn cut left
// unreadable is an outcome, not a harness fault: the error stands in the
// integrity result (which then fails) and every table reads as empty, and
// so on a PostgreSQL power cut's cluster; otherwise on PostgreSQL the
// error is returned.
func (t *trial) readOrNote(dir string, integrity bool) (Rows, []string, error) {
	rows, check, err := t.read(dir, integrity)
	if err == nil || t.pg != nil && t.pc == nil {
		return rows, check, err
	}
	rows = Rows{}
	for _, tb := range Tables(t.c.Pattern) {
		rows[tb] = []string{}
	}
	return rows, []string{UnreadablePrefix + err.Error()}, nil
}

// UnreadablePrefix starts the integrity result of a file the parent could
// not read at all after the cut.
const UnreadablePrefix = "unreadable: "

// rest is what follows the cut: a redelivery, or the batch's resume, the
// resolves of held sends and the last run. Every exit is recorded; a
// worker error (3) is an outcome, not a harness failure.
func (t *trial) rest() error {
	if t.o.PGPower != nil && !t.o.PGPower.Started {
		return nil // no server to go on with
	}
	exits := []int{protocol.ExitACK, protocol.ExitWorkerError}
	if t.c.Pattern == PatternClaim {
		for _, role := range []string{RoleProbe, RoleReclaim} {
			if _, err := t.spawn(role, Env(t.c), exits, nil); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := t.spawn(RoleSecond, Env(t.c), exits, nil); err != nil {
		return err
	}
	if t.c.Pattern != PatternBatch {
		return nil
	}
	rows, err := t.journal()
	if err != nil {
		// A journal the cut left unreadable holds no send to resolve; the
		// resume's own failure is recorded already.
		rows = nil
	}
	for _, k := range wb.HeldSends(rows, t.p.s.JobID) {
		lk, err := wb.Ask(t.ctx, t.cl, k)
		if err != nil {
			return fmt.Errorf("%w: check receiver for %s: %w", errclass.ErrHarness, k, err)
		}
		if _, err := t.spawn(RoleResolve, Env(t.c), exits, &lk); err != nil {
			return err
		}
	}
	_, err = t.spawn(RoleThird, Env(t.c), exits, nil)
	return err
}

// open opens the trial's database as the next process would: its file
// inside dir, which rolls back a hot journal or replays a WAL, or its
// schema.
func (t *trial) store(dir string) (store.Store, error) {
	if t.pg != nil {
		return t.pg.Open(t.ctx, wr.Options(""))
	}
	return store.OpenSQLite(t.ctx, DBOptions(t.c, filepath.Join(dir, filepath.Base(t.db))))
}

// journal reads the trial's journal with the worker's reader.
func (t *trial) journal() ([]wb.JournalRow, error) {
	st, err := t.store(t.dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return wb.ReadJournal(t.ctx, st)
}

// read reads every row of the trial's database (inside dir on SQLite)
// through the readers of the workers that write them, and with integrity
// the database's own check (backend.Integrity): SQLite's integrity_check,
// or amcheck on PostgreSQL.
func (t *trial) read(dir string, integrity bool) (Rows, []string, error) {
	st, err := t.store(dir)
	if err != nil {
		return nil, nil, err
	}
	var check []string
	if integrity {
		if check, err = backend.Integrity(t.ctx, st); err != nil {
			return nil, nil, errors.Join(err, st.Close())
		}
	}
	rows, err := readRows(t.ctx, t.c.Pattern, st)
	if err != nil {
		return nil, nil, errors.Join(err, st.Close())
	}
	return rows, check, st.Close()
}

// pgSchema is the schema a PostgreSQL power trial's tables live in, on
// its cluster's postgres database.
const pgSchema = "idemlab_durability"

// frozen delivers the sync cut the trial's mount froze at: the fs
// layer's, or the PostgreSQL power cluster's.
func (t *trial) frozen() <-chan powerfs.CutEvent {
	if t.pc != nil {
		return t.pc.Cluster.Frozen()
	}
	return t.fs.Cuts()
}
