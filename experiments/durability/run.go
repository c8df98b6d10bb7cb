package durability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/fstree"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	wc "idemlab/worker/claim"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
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
	return MayHoldSend(c.Pattern, c.Setting(), s.Items, point, s.faultOf(c))
}

// Run runs each condition: a normal run first, whose report names the
// crash points and whose log counts the syncs, then every other trial in
// the order Settings.Order gives.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	if err := p.applyServerSettings(ctx, env); err != nil {
		return err
	}
	for _, c := range p.s.Conditions {
		points, syncs, err := p.trial(ctx, env, c, TrialRef{Point: PointACK})
		if err != nil {
			return fmt.Errorf("%s %s: %w", c.Name, PointACK, err)
		}
		for _, tr := range p.s.share(c, p.s.Order(c, points, syncs), p.s.Shard.Runs)[1:] {
			if _, _, err := p.trial(ctx, env, c, tr); err != nil {
				return fmt.Errorf("%s %s: %w", c.Name, p.s.TrialKey(c, tr.Point, tr.Seed), err)
			}
		}
	}
	return nil
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
		e[protocol.EnvCutAtSync] = cut.String()
	default:
		e[protocol.EnvCrashAt] = point
	}
	return e
}

// WorkerKind is the crash kind the first process is told, and echoes: a
// server crash stops the worker as a kill does, and then crashes the
// server as well.
func WorkerKind(c Condition) string {
	if c.Kind == KindServer {
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
	dir string
	db  string
	o   Observation
	rcv *receiver.Receiver
	cl  *wire.Client
	ctx context.Context
	// pg is the trial's schema on PostgreSQL; nil on SQLite.
	pg *backend.Database
	// seed is the index of the trial's seed under the torn mode.
	seed int
}

// trial runs one trial and returns the points its first process passed
// and the syncs its log holds.
func (p *plan) trial(ctx context.Context, env scenario.Env, c Condition, tr TrialRef) ([]string, int, error) {
	if c.OnServer() {
		return p.serverTrial(ctx, env, c, tr)
	}
	dir, err := os.MkdirTemp(env.TempDir, "idemlab-durability-")
	if err != nil {
		return nil, 0, fmt.Errorf("%w: create trial folder: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	t := &trial{p: p, env: env, c: c, dir: dir, ctx: ctx, seed: tr.Seed}
	t.o = Observation{Scenario: Name, Condition: c.Name, Point: tr.Point, Steps: []Step{}}
	if p.s.Torn() && c.Kind == KindPower {
		t.o.Seed = &t.seed
	}
	t.db = filepath.Join(dir, DBName(c.Pattern))
	t.o.DB = t.db
	stop, err := t.startReceiver()
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	if err := t.prepare(); err != nil {
		return nil, 0, fmt.Errorf("%w: prepare: %w", errclass.ErrHarness, err)
	}
	first, err := t.first(tr.Point)
	if err != nil {
		return nil, 0, err
	}
	if err := t.cut(); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if err := t.rest(); err != nil {
		return nil, 0, err
	}
	t.o.Final, _ = t.readOrNote(t.dir, false)
	t.sends()
	if err := env.Recorder.Observe(t.o); err != nil {
		return nil, 0, fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
	}
	return first.Report.Points, faultvfs.Syncs(t.o.Log), nil
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

// sends keeps the receiver's whole log, once the trial's last process
// has exited.
func (t *trial) sends() {
	if t.rcv != nil {
		t.o.Sends, _ = t.rcv.LogSince(0)
	}
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
	proc, err := t.spawn(RoleFirst, FirstEnv(t.c, point), []int{protocol.ExitACK, protocol.ExitCrash}, nil)
	if reader != nil {
		if rerr := reader.release(); rerr != nil && err == nil {
			err = fmt.Errorf("%w: release the reader: %w", errclass.ErrHarness, rerr)
		}
	}
	return proc, err
}

// prepare creates the file and its tables with the default VFS and no
// connection left open, then declares the folder durable.
func (t *trial) prepare() error {
	o := DBOptions(t.c, t.db)
	db, _, err := sqlitedb.Open(t.ctx, o)
	if err != nil {
		return err
	}
	switch t.c.Pattern {
	case PatternClaim:
		// The worker would create it too; made here, the table is part of
		// the baseline and the delivery's only commits are the claim's.
		err = wc.CreateSchema(t.ctx, db, wc.SchemaNew)
	case PatternBatch:
		_, err = db.ExecContext(t.ctx, wb.Schema)
	default:
		_, err = db.ExecContext(t.ctx, wr.Schema)
	}
	if err != nil {
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
	proc, err := t.env.Runner.Run(t.ctx, harness.Spec{
		Scenario: Name, Condition: t.c.Name, Label: t.o.Point + " " + role,
		Worker: w, Args: args, Env: env, CrashAt: crashAt, Exits: exits,
	})
	if err != nil {
		return nil, err
	}
	step.ProcessID = proc.Record.ID
	t.o.Steps = append(t.o.Steps, step)
	return proc, nil
}

// cut keeps the VFS's op log, reads what a kill leaves from a copy of the
// folder, then, for a power cut, recovers the folder to what the disk held
// under the settings' fault mode, and reads again with an integrity check.
// The folder is baselined afterwards, since the parent's own reads changed
// it outside the VFS.
func (t *trial) cut() error {
	var err error
	if t.o.Log, err = faultvfs.ReadLog(t.dir); err != nil {
		return err
	}
	cp, err := os.MkdirTemp(t.env.TempDir, "idemlab-durability-copy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cp)
	if err := copyFolder(t.dir, cp); err != nil {
		return fmt.Errorf("copy the folder: %w", err)
	}
	if t.o.Before, _, err = t.read(cp, false); err != nil {
		return fmt.Errorf("read the rows a kill leaves: %w", err)
	}
	if t.c.Kind == KindPower {
		rep, err := faultvfs.RecoverWith(t.dir, t.p.s.FaultOptions(t.seed))
		if err != nil {
			return err
		}
		rep.Log = nil // the observation's Log is the same
		t.o.Recovery = &rep
	}
	t.o.After, t.o.Integrity = t.readOrNote(t.dir, true)
	return faultvfs.Baseline(t.dir)
}

// readOrNote reads like read, but a file a torn cut left unreadable is an
// outcome, not a harness fault: the error stands in the integrity result
// (which then fails) and every table reads as empty.
func (t *trial) readOrNote(dir string, integrity bool) (Rows, []string) {
	rows, check, err := t.read(dir, integrity)
	if err == nil {
		return rows, check
	}
	rows = Rows{}
	for _, tb := range Tables(t.c.Pattern) {
		rows[tb] = []string{}
	}
	return rows, []string{UnreadablePrefix + err.Error()}
}

// UnreadablePrefix starts the integrity result of a file the parent could
// not read at all after the cut.
const UnreadablePrefix = "unreadable: "

// rest is what follows the cut: a redelivery, or the batch's resume, the
// resolves of held sends and the last run. Every exit is recorded; a
// worker error (3) is an outcome, not a harness failure.
func (t *trial) rest() error {
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

// copyFolder copies the folder's regular files but the WAL index, which
// SQLite rebuilds, and faultvfs's sidecar, which only the VFS reads.
func copyFolder(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), "-shm") {
			continue
		}
		if err := fstree.CopyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
