// Package deliver runs a built-in subject's trials with real processes,
// as the engine plans them: a delivery (crashed at a point or hit, or
// killed after a delay), then the subject's recovery, each process on one
// fresh database and, for a subject that sends, one receiver; a race of
// racers behind a barrier; a lease takeover. After every step it reads
// the subject's tables and records a subject.Observation.
//
// Its fold (Folding.Fold, fold.go and fold*.go) reads those records back:
// each process against what the runner chose, each recovery replayed
// from the subject's model, each k and delay from the seed, and each
// trial's history under the subject's invariants, into one figure per
// fault class (DiscoveryObserved, SweepObserved, HitsObserved,
// TimingObserved, TakeoverObserved) for a scenario's oracle.
package deliver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// Cond is what a trial's condition asks of the runner beyond the
// engine's trial.
type Cond struct {
	// Unfenced runs a takeover with the fence off: unconditional journal
	// writes and a receiver that accepts any generation.
	Unfenced bool
	// Kills records a race's kill delays (a race whose racers are killed).
	Kills bool
	// Spec is the backend the condition runs on.
	Spec backend.Spec
}

// Runner is one subject's trials in one run, as the engine's subject.
type Runner struct {
	Env scenario.Env
	// Scenario names the records; DBName is each trial's file name.
	Scenario string
	DBName   string
	Params   subject.Params
	Subject  subject.Subject
	Conds    map[string]Cond
	// SendLatency is how long each trial's receiver holds a send before
	// it logs it: none in a run; a test sets it to keep a killed worker's
	// last request in flight past its death.
	SendLatency time.Duration
}

// Deliver runs one trial of the subject. A discovery (class None) runs
// the delivery alone and tells the engine the points it passed and its
// kill window; a discovery that misbehaved or passed no point leaves
// nothing to sweep or pause at, and its condition fails on what its
// worker did.
func (r Runner) Deliver(ctx context.Context, t engine.Trial) (engine.Found, error) {
	switch t.Class {
	case engine.None:
		proc, err := r.trial(ctx, t)
		if err != nil {
			return engine.Found{}, err
		}
		return engine.Found{Points: proc.Report.Points, WindowUS: engine.KillWindowUS(proc.Record.DurationMS, 0)}, nil
	case engine.Takeover:
		return engine.Found{}, r.takeover(ctx, t.Condition, t.Index, t.Point)
	case engine.Concurrent:
		kills := t.KillsUS
		if kills == nil {
			kills = make([]int64, t.Racers)
		}
		return engine.Found{}, r.race(ctx, t.Condition, t.Index, t.Racers, kills)
	}
	_, err := r.trial(ctx, t)
	return engine.Found{}, err
}

// Processes is the most processes the runner starts for one trial of
// class c of subject s: a discovery's delivery; a takeover's paused
// holder and its successor; a race's racers and its recovery, one
// process on SQLite and on PostgreSQL the recovery the model plans after
// racers that all ran to their end; any other trial's delivery and the
// recovery after a crash at the model's worst point.
func Processes(s subject.Subject, p subject.Params, c engine.Kind, racers int) int {
	switch c {
	case engine.None:
		return 1
	case engine.Takeover:
		return 2
	case engine.Concurrent:
		if p.Backend == "" {
			return racers + 1
		}
		return racers + s.RaceRecovery(p)
	}
	return s.TrialProcesses(p)
}

// trialEnv is one trial's folder, file and receiver. files.Receiver is
// the receiver's bare URL; each process is given its own (sender).
type trialEnv struct {
	dir   string
	files subject.Files
	rcv   *receiver.Receiver
	// senders counts the sender tokens minted for the trial's processes.
	senders int
}

// sender mints the next process's sender token and returns the trial's
// files with the receiver URL that process is given. A trial without a
// receiver mints none.
func (t *trialEnv) sender() (subject.Files, string) {
	if t.rcv == nil {
		return t.files, ""
	}
	t.senders++
	tok := wire.Token(t.senders)
	return t.files.As(tok), tok
}

// tokens lists tok as an observation's senders; none when it is empty.
func tokens(tok ...string) []string {
	if len(tok) == 0 || tok[0] == "" {
		return nil
	}
	return tok
}

// newTrial makes a trial's folder and, for a subject that sends, starts
// its receiver, fenced unless the condition turns the fence off.
func (r Runner) newTrial(cond string) (*trialEnv, error) {
	dir, err := os.MkdirTemp(r.Env.TempDir, "idemlab-"+r.Scenario+"-")
	if err != nil {
		return nil, fmt.Errorf("%w: create database folder: %w", errclass.ErrHarness, err)
	}
	t := &trialEnv{dir: dir, files: subject.Files{DB: filepath.Join(dir, r.DBName)}}
	if r.Subject.Sends {
		t.rcv, err = receiver.Start(receiver.Config{Fence: r.Subject.Fenced && !r.Conds[cond].Unfenced, SendLatency: r.SendLatency})
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.files.Receiver = t.rcv.URL
	}
	return t, nil
}

func (t *trialEnv) close() {
	if t.rcv != nil {
		t.rcv.Close()
	}
	os.RemoveAll(t.dir)
}

// observation is the start of a step's record.
func (r Runner) observation(cond string, i int, step string, t *trialEnv) subject.Observation {
	return subject.Observation{Scenario: r.Scenario, Condition: cond, Trial: i, Step: step, DB: t.files.DB, Receiver: t.files.Receiver}
}

// trial runs one trial: the delivery, then for every class but the
// discovery the subject's recovery, each process on the same file and
// receiver. It returns the first delivery's process.
func (r Runner) trial(ctx context.Context, tr engine.Trial) (*harness.Proc, error) {
	t, err := r.newTrial(tr.Condition)
	if err != nil {
		return nil, err
	}
	defer t.close()
	fl, tok := t.sender()
	spec := harness.Spec{
		Scenario: r.Scenario, Condition: tr.Condition, Label: subject.Label(tr.Index, subject.StepDelivery),
		Worker: r.Subject.Worker, Args: r.Subject.Args(r.Params, fl), CrashAt: tr.Point,
		KillAfter: time.Duration(tr.KillUS) * time.Microsecond,
	}
	o := r.observation(tr.Condition, tr.Index, subject.StepDelivery, t)
	o.Senders, o.Point, o.K = tokens(tok), tr.Point, tr.K
	if tr.K > 0 {
		spec.Env = map[string]string{protocol.EnvCrashAfterHits: strconv.Itoa(tr.K)}
	}
	if tr.KillUS > 0 {
		o.KillDelaysUS = []int64{tr.KillUS}
	}
	first, rows, err := r.step(ctx, t, spec, o)
	if err != nil || tr.Class == engine.None {
		return first, err
	}
	return first, r.recovery(ctx, t, tr.Condition, tr.Index, rows)
}

// recovery runs the subject's recovery of trial i, process by process,
// from the state rows the step before it left.
func (r Runner) recovery(ctx context.Context, t *trialEnv, cond string, i int, rows subject.State) error {
	var done []string
	for {
		fl, tok := t.sender()
		a, ok := r.Subject.NextAction(r.Params, fl, done, rows)
		if !ok {
			return nil
		}
		ro := r.observation(cond, i, a.Step, t)
		ro.Senders = tokens(tok)
		if a.LookUp != "" {
			l, err := t.lookUp(ctx, a.LookUp)
			if err != nil {
				return err
			}
			ro.Lookup, a.Args = &l, a.With(l)
		}
		rec := harness.Spec{
			Scenario: r.Scenario, Condition: cond, Label: subject.Label(i, a.Step),
			Worker: a.Worker, Args: a.Args, Exits: []int{protocol.ExitACK},
		}
		var err error
		if _, rows, err = r.step(ctx, t, rec, ro); err != nil {
			return err
		}
		done = append(done, a.Step)
	}
}

// lookUp asks the trial's receiver about a send, as the batch scenario's
// parent does before a resolve.
func (t *trialEnv) lookUp(ctx context.Context, key string) (subject.Lookup, error) {
	parts := strings.SplitN(key, ":", 3)
	if t.rcv == nil || len(parts) != 3 {
		return subject.Lookup{}, fmt.Errorf("%w: look up %q: no receiver or not job:item:step", errclass.ErrHarness, key)
	}
	c := wire.NewClient(t.rcv.URL)
	defer c.CloseIdle()
	rc, found, err := c.Lookup(ctx, wire.Key{Job: parts[0], Item: parts[1], Step: parts[2]})
	if err != nil {
		return subject.Lookup{}, fmt.Errorf("%w: look up %s: %w", errclass.ErrHarness, key, err)
	}
	return subject.Lookup{Key: key, Found: found, Receipt: rc}, nil
}

// step runs one process, reads the tables and records the observation.
func (r Runner) step(ctx context.Context, t *trialEnv, spec harness.Spec, o subject.Observation) (*harness.Proc, subject.State, error) {
	proc, err := r.Env.Runner.Run(ctx, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", spec.Condition, spec.Label, err)
	}
	o.ProcessIDs = []int{proc.Record.ID}
	rows, err := r.observe(ctx, t, o)
	return proc, rows, err
}

// observe reads the tables, adds the receiver's log of the whole trial,
// and records the observation.
func (r Runner) observe(ctx context.Context, t *trialEnv, o subject.Observation) (subject.State, error) {
	rows, err := r.read(ctx, o.DB)
	if err != nil {
		return nil, fmt.Errorf("%w: %s trial %d %s: read rows: %w", errclass.ErrHarness, o.Condition, o.Trial, o.Step, err)
	}
	if t.rcv != nil {
		log, _ := t.rcv.LogSince(0)
		rows[subject.TableSends] = []string{}
		for _, e := range log {
			rows[subject.TableSends] = append(rows[subject.TableSends], subject.SendRow(e))
		}
	}
	o.Rows = rows
	return rows, engine.Record(r.Env.Recorder, o)
}

// read reads the subject's tables as the next process would find them:
// the file db on SQLite, the schema db names on PostgreSQL.
func (r Runner) read(ctx context.Context, db string) (subject.State, error) {
	if r.Env.Backend == nil {
		return r.Subject.Read(ctx, db)
	}
	st, _, err := store.Open(ctx, store.BackendPostgres, db, sqlitedb.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return r.Subject.ReadOn(ctx, st)
}
