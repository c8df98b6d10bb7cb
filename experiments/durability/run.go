package durability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	wc "idemlab/worker/claim"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// busyTimeoutMS is every worker's default busy timeout; the matrix does not
// vary it.
const busyTimeoutMS = 5000

// File names inside a trial's folder.
const (
	DBRedelivery = "events.sqlite3"
	DBBatch      = "journal.sqlite3"
)

// Roles of the processes of a trial, in order.
const (
	RoleFirst   = "first"   // the process that crashes or ACKs before the cut
	RoleSecond  = "second"  // the redelivery, or the batch's resume
	RoleResolve = "resolve" // a batch resolve of a held send
	RoleThird   = "third"   // the batch run after the resolves
)

// Observation is one trial: one line of observations.jsonl.
type Observation struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	// Point is the crash point of the first process, or PointACK.
	Point string `json:"point"`
	// DB is the trial's database; each trial has its own folder.
	DB string `json:"db"`
	// Receiver is the batch trial's receiver URL.
	Receiver string `json:"receiver,omitempty"`
	Steps    []Step `json:"steps"`
	// Before is what the first process left as a kill leaves it: read by
	// the parent from a copy of the folder, before any cut.
	Before Rows `json:"before"`
	// Recovery is faultvfs's report of the cut; absent for a kill.
	Recovery *faultvfs.Report `json:"recovery,omitempty"`
	// After is what the next process finds, and Integrity what PRAGMA
	// integrity_check said about it.
	After     Rows     `json:"after"`
	Integrity []string `json:"integrity"`
	// Final is the file after the trial's last process.
	Final Rows `json:"final"`
	// Sends is the batch receiver's whole log for the trial.
	Sends []receiver.Entry `json:"sends,omitempty"`
}

// Step is one process of a trial.
type Step struct {
	Role      string `json:"role"`
	ProcessID int    `json:"process_id"`
	// Lookup is what the parent asked the receiver before a resolve.
	Lookup *wb.Lookup `json:"lookup,omitempty"`
}

// Rows are a file's rows per table, each rendered as "col|col|...", in the
// table's order.
type Rows map[string][]string

type plan struct{ s Settings }

func (p *plan) Settings() any { return p.s }

// Processes counts from the model with no loss: two per redelivery trial;
// run, resume, one resolve per crash point, and the last run for batch;
// delivery, probe and re-claim for the claim.
func (p *plan) Processes() int {
	n := 0
	for _, c := range p.s.Conditions {
		pts := len(Points(c.Pattern, p.s.Items))
		switch c.Pattern {
		case PatternBatch:
			n += 3*(pts+1) + pts
		case PatternClaim:
			n += 3 * (pts + 1)
		default:
			n += 2 * (pts + 1)
		}
	}
	return n
}

// Run runs each condition: a normal run first, whose report names the
// crash points, then one trial per point.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	for _, c := range p.s.Conditions {
		first, err := p.trial(ctx, env, c, PointACK)
		if err != nil {
			return fmt.Errorf("%s %s: %w", c.Name, PointACK, err)
		}
		for _, pt := range first {
			if _, err := p.trial(ctx, env, c, pt); err != nil {
				return fmt.Errorf("%s %s: %w", c.Name, pt, err)
			}
		}
	}
	return nil
}

// Env is the environment of every process of a trial; the first process
// also gets the crash kind and, unless it is the normal run, the point.
func Env(c Condition) map[string]string {
	return map[string]string{protocol.EnvVFS: protocol.VFSFault, protocol.EnvJournalMode: c.JournalMode, protocol.EnvSynchronous: c.Synchronous}
}

// FirstEnv is the first process's environment.
func FirstEnv(c Condition, point string) map[string]string {
	e := Env(c)
	e[protocol.EnvCrashKind] = c.Kind
	if point != PointACK {
		e[protocol.EnvCrashAt] = point
	}
	return e
}

// RedeliveryArgs are a delivery's worker arguments.
func RedeliveryArgs(s Settings, c Condition, db string) wr.Args {
	p := wr.SeparateCommit
	if c.Pattern == PatternSingle {
		p = wr.SingleTransaction
	}
	return wr.Args{DB: db, Pattern: p, Event: wr.Event{ID: s.EventID, JobKey: s.JobKey}}
}

// BatchArgs is a batch run's command line after the worker name: the
// journal, no latency, no verification, as the batch scenario's resume.
func BatchArgs(s Settings, db, receiver string) []string {
	return wb.RunArgs{Mode: wb.ModeJournal, Job: s.JobID, Items: s.Items, Receiver: receiver, DB: db}.Argv()
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
	cl  *wb.Client
	ctx context.Context
}

// trial runs one trial and returns the points its first process passed.
func (p *plan) trial(ctx context.Context, env scenario.Env, c Condition, point string) ([]string, error) {
	dir, err := os.MkdirTemp(env.TempDir, "idemlab-durability-")
	if err != nil {
		return nil, fmt.Errorf("%w: create trial folder: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	t := &trial{p: p, env: env, c: c, dir: dir, ctx: ctx}
	t.o = Observation{Scenario: Name, Condition: c.Name, Point: point, Steps: []Step{}}
	if c.Pattern == PatternBatch {
		t.db = filepath.Join(dir, DBBatch)
		if t.rcv, err = receiver.Start(receiver.Config{}); err != nil {
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		defer t.rcv.Close()
		t.cl = wb.NewClient(t.rcv.URL)
		defer t.cl.CloseIdle()
		t.o.Receiver = t.rcv.URL
	} else {
		t.db = filepath.Join(dir, DBName(c.Pattern))
	}
	t.o.DB = t.db
	if err := t.prepare(); err != nil {
		return nil, fmt.Errorf("%w: prepare: %w", errclass.ErrHarness, err)
	}
	first, err := t.spawn(RoleFirst, FirstEnv(c, point), []int{protocol.ExitACK, protocol.ExitCrash}, nil)
	if err != nil {
		return nil, err
	}
	if err := t.cut(); err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if err := t.rest(); err != nil {
		return nil, err
	}
	if t.o.Final, _, err = t.read(t.dir, false); err != nil {
		return nil, fmt.Errorf("%w: read the final rows: %w", errclass.ErrHarness, err)
	}
	if t.rcv != nil {
		t.o.Sends, _ = t.rcv.LogSince(0)
	}
	if err := env.Recorder.Observe(t.o); err != nil {
		return nil, fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
	}
	return first.Report.Points, nil
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

// DBName is a pattern's file name inside a trial's folder.
func DBName(pattern string) string {
	switch pattern {
	case PatternBatch:
		return DBBatch
	case PatternClaim:
		return DBClaims
	}
	return DBRedelivery
}

// StepArgs is the worker and command line of a trial's process in role;
// the run and the fold both build them so. A resolve's are built from its
// lookup instead.
func StepArgs(s Settings, c Condition, role, db, receiver string) (string, []string) {
	switch c.Pattern {
	case PatternBatch:
		return wb.WorkerRun, BatchArgs(s, db, receiver)
	case PatternClaim:
		return we.ClaimName, ClaimArgs(s, db, claimHolders[role]).Argv()
	}
	return wr.WorkerName, RedeliveryArgs(s, c, db).Argv()
}

func (t *trial) spawn(role string, env map[string]string, exits []int, lk *wb.Lookup) (*harness.Proc, error) {
	w, args := StepArgs(t.p.s, t.c, role, t.db, t.o.Receiver)
	if role == RoleResolve {
		w, args = wb.WorkerResolve, ResolveArgs(t.p.s, t.db, *lk).Argv()
	}
	crashAt := env[protocol.EnvCrashAt]
	delete(env, protocol.EnvCrashAt)
	proc, err := t.env.Runner.Run(t.ctx, harness.Spec{
		Scenario: Name, Condition: t.c.Name, Label: t.o.Point + " " + role,
		Worker: w, Args: args, Env: env, CrashAt: crashAt, Exits: exits,
	})
	if err != nil {
		return nil, err
	}
	t.o.Steps = append(t.o.Steps, Step{Role: role, ProcessID: proc.Record.ID, Lookup: lk})
	return proc, nil
}

// cut reads what a kill leaves from a copy of the folder, then, for a
// power cut, recovers the folder to what the disk held, and reads again
// with an integrity check. The folder is baselined afterwards, since the
// parent's own reads changed it outside the VFS.
func (t *trial) cut() error {
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
		rep, err := faultvfs.Recover(t.dir)
		if err != nil {
			return err
		}
		t.o.Recovery = &rep
	}
	if t.o.After, t.o.Integrity, err = t.read(t.dir, true); err != nil {
		return fmt.Errorf("read the rows after the cut: %w", err)
	}
	return faultvfs.Baseline(t.dir)
}

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
		return fmt.Errorf("%w: read the journal after the resume: %w", errclass.ErrHarness, err)
	}
	for _, k := range wb.HeldSends(rows, t.p.s.JobID) {
		lk, err := t.cl.Ask(t.ctx, k)
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

// ResolveArgs is the command line of the resolve that lookup lk calls
// for; the run and the fold both build it so.
func ResolveArgs(s Settings, db string, lk wb.Lookup) wb.ResolveArgs {
	k := wb.Key{Job: s.JobID}
	k.Item, k.Step, _ = strings.Cut(strings.TrimPrefix(lk.Key, s.JobID+":"), ":")
	return lk.Resolve(db, k)
}

// journalRows renders the batch worker's journal, read by its own reader,
// as Rows hold it: "job|item|step|status|receipt" in key order.
func journalRows(ctx context.Context, st store.Store) ([]string, error) {
	rows, err := wb.ReadJournal(ctx, st)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, r := range rows {
		out = append(out, strings.Join([]string{r.Job, r.Item, r.Step, r.Status, r.Receipt}, "|"))
	}
	return out, nil
}

// journal reads the trial's journal with the worker's reader, opening the
// file as the next process would.
func (t *trial) journal() ([]wb.JournalRow, error) {
	st, err := store.OpenSQLite(t.ctx, DBOptions(t.c, t.db))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return wb.ReadJournal(t.ctx, st)
}

// Table names in Rows.
const (
	TableJobs      = wr.TableJobs
	TableProcessed = wr.TableProcessed
	TableJournal   = "step_journal"
)

// Tables lists the tables a pattern's rows hold.
func Tables(pattern string) []string {
	switch pattern {
	case PatternBatch:
		return []string{TableJournal}
	case PatternClaim:
		return []string{TableClaims}
	}
	return []string{TableJobs, TableProcessed}
}

// read opens the trial's file inside dir as the next process would, which
// rolls back a hot journal or replays a WAL, and reads every row: the
// redelivery and claim tables through the readers of the workers that
// write them.
func (t *trial) read(dir string, integrity bool) (Rows, []string, error) {
	db, _, err := sqlitedb.Open(t.ctx, DBOptions(t.c, filepath.Join(dir, filepath.Base(t.db))))
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	var check []string
	if integrity {
		rs, err := db.QueryContext(t.ctx, "PRAGMA integrity_check")
		if err != nil {
			return nil, nil, fmt.Errorf("integrity_check: %w", err)
		}
		for rs.Next() {
			var s string
			if err := rs.Scan(&s); err != nil {
				rs.Close()
				return nil, nil, fmt.Errorf("integrity_check: %w", err)
			}
			check = append(check, s)
		}
		rs.Close()
	}
	switch t.c.Pattern {
	case PatternClaim:
		c, err := wc.ReadClaims(t.ctx, store.SQLiteDB(db))
		if err != nil {
			return nil, nil, err
		}
		return Rows(c.Lines()), check, db.Close()
	case PatternSeparate, PatternSingle:
		s, err := wr.ReadState(t.ctx, store.SQLiteDB(db))
		if err != nil {
			return nil, nil, err
		}
		return Rows(s.Lines()), check, db.Close()
	}
	rows := Rows{}
	if rows[TableJournal], err = journalRows(t.ctx, store.SQLiteDB(db)); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", TableJournal, err)
	}
	return rows, check, db.Close()
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
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
