package batch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

type plan struct{ s Settings }

func (p *plan) Settings() any { return p.s }

// Caps: its lanes are its own (Run), not the suite's slots; it needs
// nothing before the run.
func (p *plan) Caps() scenario.PlanCaps { return scenario.PlanCaps{} }

// Processes counts runs and resolves from the model, which plays the
// same script as Run.
func (p *plan) Processes() int {
	n := 0
	for _, c := range p.s.Conditions {
		o := Expect(p.s.Params(c))
		n += (len(o.Runs) + len(o.Resolved)) * p.s.Trials
	}
	return n
}

// Run runs every condition's trials, a lane per mode when modes go side by
// side, and records what the parent saw after each process.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	// Whatever ran before leaves dirty pages too; they are written now,
	// not during the timed runs.
	if err := syncFS(env.TempDir); err != nil {
		return err
	}
	lanes := map[string][]Condition{}
	var jobs []func(context.Context) error
	for _, c := range p.s.Conditions {
		key := laneOf(p.s, c)
		if _, ok := lanes[key]; !ok {
			jobs = append(jobs, func(ctx context.Context) error { return p.runLane(ctx, env, lanes[key]) })
		}
		lanes[key] = append(lanes[key], c)
	}
	return harness.RunJobs(ctx, len(jobs), jobs)
}

// runLane runs a lane's trials in two phases. First every trial's first
// run, FirstRunLanes at a time: the lane's i-th trial goes to sub-lane
// i mod FirstRunLanes, and each sub-lane takes its trials in order. First
// runs are never timed against the floor, and they spend most of their
// time waiting on simulated latency, so they share the cores well. Then,
// one trial after another, the rest of each trial's script, alone: the
// runs the article times share the machine with no other worker of the
// lane (nor of any other, unless modes run side by side).
// Each trial keeps its receiver and its journal folder from its first run
// to its last.
func (p *plan) runLane(ctx context.Context, env scenario.Env, conds []Condition) error {
	var trials []*trial
	for _, c := range conds {
		for n := 1; n <= p.s.Trials; n++ {
			trials = append(trials, &trial{p: p, env: env, c: c, n: n, script: Script(p.s.Params(c))})
		}
	}
	defer func() {
		for _, t := range trials {
			t.cleanup()
		}
	}()
	if err := p.databases(ctx, env, trials); err != nil {
		return err
	}
	// Sub-lane j takes trials j, j+k, j+2k, ...: a fixed deal, so the
	// fold can name the critical path's floor from the settings alone.
	k := max(p.s.FirstRunLanes, 1)
	firsts := make([]func(context.Context) error, k)
	for j := range firsts {
		firsts[j] = func(ctx context.Context) error {
			for i := j; i < len(trials); i += k {
				if err := trials[i].act(ctx, 0); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := harness.RunJobs(ctx, k, firsts); err != nil {
		return err
	}
	// The first runs leave dirty pages that the kernel would write back
	// during the timed runs, whose commits would then wait for them.
	if err := syncFS(env.TempDir); err != nil {
		return err
	}
	for _, t := range trials {
		for ai := 1; ai < len(t.script); ai++ {
			if err := t.act(ctx, ai); err != nil {
				return err
			}
		}
		t.cleanup()
	}
	return nil
}

// databases gives each journal trial of a lane its fresh database before
// any runs: on PostgreSQL a schema each, all made in one transaction
// (FreshMany), where the trial's runs make their table; on SQLite nothing
// yet, since each trial's runs make their file in the trial's folder.
func (p *plan) databases(ctx context.Context, env scenario.Env, trials []*trial) error {
	if p.s.Backend == "" {
		return nil
	}
	if env.Backend == nil {
		return fmt.Errorf("%w: the batch's settings are PostgreSQL's, but the run has no PostgreSQL server", errclass.ErrHarness)
	}
	var need []*trial
	for _, t := range trials {
		if UsesJournal(p.s.Params(t.c)) {
			need = append(need, t)
		}
	}
	dbs, err := env.Backend.FreshMany(ctx, Name, make([]string, len(need)))
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	for i, t := range need {
		t.db = dbs[i].Target
	}
	return nil
}

// trial is one condition-trial in progress.
type trial struct {
	p       *plan
	env     scenario.Env
	c       Condition
	n       int
	script  []Action
	dir     string
	db      string
	journal bool
	rcv     *receiver.Receiver
	client  *wire.Client
	logged  int
	rows    []wb.JournalRow
	runs    int
}

// act runs the trial's ai-th script action, preparing the trial first.
func (t *trial) act(ctx context.Context, ai int) error {
	if err := t.prepare(); err != nil {
		return fmt.Errorf("%s trial %d: %w", t.c.Name, t.n, err)
	}
	var err error
	switch a := t.script[ai]; a.Kind {
	case ActRun:
		err = t.run(ctx, a)
	case ActResolveHeld:
		for _, k := range wb.HeldSends(t.rows, a.Job) {
			if err = t.resolve(ctx, k); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s trial %d: %w", t.c.Name, t.n, err)
	}
	return nil
}

// prepare creates the trial's journal folder and starts its receiver,
// once.
func (t *trial) prepare() error {
	if t.rcv != nil {
		return nil
	}
	dir, err := os.MkdirTemp(t.env.TempDir, "idemlab-batch-")
	if err != nil {
		return fmt.Errorf("%w: create journal folder: %w", errclass.ErrHarness, err)
	}
	params := t.p.s.Params(t.c)
	rc := receiver.Config{SendLatency: wb.MSDuration(t.p.s.LatencyMS.Send)}
	if Injects(params) {
		rc.FailItem, rc.FailMode = wb.ItemID(t.p.s.FailAt), t.c.Mode
	}
	rcv, err := receiver.Start(rc)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	t.dir, t.rcv, t.client, t.journal = dir, rcv, wire.NewClient(rcv.URL), UsesJournal(params)
	if t.journal && t.p.s.Backend == "" {
		t.db = filepath.Join(dir, DBName)
	}
	return nil
}

// cleanup stops the receiver and removes the folder; it may run twice.
func (t *trial) cleanup() {
	if t.rcv == nil {
		return
	}
	t.client.CloseIdle()
	t.rcv.Close()
	os.RemoveAll(t.dir)
	t.rcv = nil
}

// run starts the trial's next run with a sender token of its own, the
// run's number, in the receiver URL it is given.
func (t *trial) run(ctx context.Context, a Action) error {
	t.runs++
	step, tok := "run "+strconv.Itoa(t.runs), RunSender(t.runs)
	proc, err := t.env.Runner.Run(ctx, harness.Spec{
		Scenario: Name, Condition: t.c.Name, Label: fmt.Sprintf("trial %d %s", t.n, step),
		Worker: wb.WorkerRun, Args: runArgs(t.p.s, a, t.db, wire.SenderURL(t.rcv.URL, tok)).Argv(), CrashAt: a.CrashPoint,
		Exits: []int{protocol.ExitACK, protocol.ExitCrash, protocol.ExitStepFailed},
	})
	if err != nil {
		return err
	}
	return t.observe(ctx, step, tok, proc.Record.ID, nil)
}

// RunSender is the sender token of a trial's n-th run. A resolve sends
// nothing and is given no receiver URL.
func RunSender(n int) string { return wire.Token(n) }

// resolve does what the article's person does: look the held send up at
// the receiver by job, item and step, then run resolve with the answer.
func (t *trial) resolve(ctx context.Context, k wire.Key) error {
	lk, err := wb.Ask(ctx, t.client, k)
	if err != nil {
		return fmt.Errorf("%w: check receiver for %s: %w", errclass.ErrHarness, k, err)
	}
	step := "resolve " + k.String()
	proc, err := t.env.Runner.Run(ctx, harness.Spec{
		Scenario: Name, Condition: t.c.Name, Label: fmt.Sprintf("trial %d %s", t.n, step),
		Worker: wb.WorkerResolve, Args: resolveArgs(t.p.s, lk, t.db, k).Argv(), Exits: []int{protocol.ExitACK},
	})
	if err != nil {
		return err
	}
	return t.observe(ctx, step, "", proc.Record.ID, &lk)
}

func (t *trial) observe(ctx context.Context, step, sender string, pid int, lk *wb.Lookup) error {
	sends, n := t.rcv.LogSince(t.logged)
	t.logged = n
	o := Observation{
		Scenario: Name, Condition: t.c.Name, Trial: t.n, Step: step, ProcessID: pid,
		Receiver: t.rcv.URL, Sender: sender, DB: t.db, Sends: sends, Lookup: lk,
	}
	if t.journal {
		rows, err := readJournal(ctx, t.p.s.backendName(), t.db)
		if err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.rows, o.Journal = rows, rows
	}
	return engine.Record(t.env.Recorder, o)
}

// readJournal opens the journal as the next process would, which on
// SQLite also replays a WAL left by a crash, and lists every row in key
// order. A file that does not exist yet, or a schema without the table,
// has no rows.
func readJournal(ctx context.Context, b, target string) ([]wb.JournalRow, error) {
	if store.Missing(b, target) {
		return []wb.JournalRow{}, nil
	}
	st, _, err := store.Open(ctx, b, target, wb.Options(target))
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer st.Close()
	return wb.ReadJournal(ctx, st)
}
