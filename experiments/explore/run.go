package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/pattern"
	"idemlab/experiments/receiver"

	"idemlab/experiments/harness"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// Run puts every pattern on the engine: its discovery on SQLite, then its
// conditions' sets; on PostgreSQL, its races only, without discovery.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	st := p.s
	if st.Backend != "" && env.Backend == nil {
		return fmt.Errorf("%w: explore's settings are PostgreSQL's, but the run has no PostgreSQL server", errclass.ErrHarness)
	}
	for _, c := range st.Conditions {
		if _, ok := LookupPattern(c.Pattern); !ok || st.Backend != "" && c.Kind != KindRace {
			return fmt.Errorf("%w: condition %s is not a trial of a registered pattern, or not a race on PostgreSQL", errclass.ErrHarness, c.Name)
		}
	}
	var units []engine.Unit
	conds := st.conditionsByName()
	for _, ps := range st.Patterns {
		pat, ok := LookupPattern(ps.Name)
		if !ok {
			return fmt.Errorf("%w: pattern %q is not registered", errclass.ErrHarness, ps.Name)
		}
		u := engine.Unit{Subject: subject{env: env, st: st, pat: pat, conds: conds}}
		if st.Backend == "" {
			u.Discovery = ps.Name + "/" + KindDiscovery
		}
		for _, c := range st.Conditions {
			if c.Pattern == ps.Name && c.Kind != KindDiscovery {
				u.Sets = append(u.Sets, c.set())
			}
		}
		units = append(units, u)
	}
	// The built-in patterns' run and each article file's run go side by
	// side, sharing the slots: together they keep p.Parallel trials
	// going, and none waits for another's discovery or last race.
	env.Slots = env.SlotsOf(p.Parallel(0))
	runs := []func(context.Context) error{func(ctx context.Context) error {
		_, err := engine.Run{Seed: st.Seed, Slots: env.Slots, Shard: st.Shard, Units: units}.Execute(ctx)
		return err
	}}
	for _, a := range st.articles() {
		runs = append(runs, func(ctx context.Context) error { return pattern.Run(ctx, articleEnv(env, st, a), a, Name) })
	}
	return harness.RunJobs(ctx, len(runs), runs)
}

// subject is a pattern's built-in workers as the engine's subject.
type subject struct {
	env   scenario.Env
	st    Settings
	pat   Pattern
	conds map[string]Condition
}

// Deliver runs one trial of the pattern. A discovery that misbehaved or
// passed no point leaves nothing to sweep or pause at; the run goes on
// with the rest, and the discovery condition fails on what its worker
// did.
func (s subject) Deliver(ctx context.Context, t engine.Trial) (engine.Found, error) {
	c := s.conds[t.Condition]
	switch t.Class {
	case engine.None:
		proc, err := runTrialSteps(ctx, s.env, s.st, s.pat, c, 0, stepPlan{})
		if err != nil {
			return engine.Found{}, err
		}
		return engine.Found{Points: proc.Report.Points, WindowUS: engine.KillWindowUS(proc.Record.DurationMS, 0)}, nil
	case engine.Takeover:
		return engine.Found{}, runTakeover(ctx, s.env, s.st, s.pat, c, t.Index, t.Point)
	case engine.Concurrent:
		kills := t.KillsUS
		if kills == nil {
			kills = make([]int64, t.Racers)
		}
		return engine.Found{}, runRace(ctx, s.env, s.st, s.pat, c, t.Index, kills)
	}
	_, err := runTrialSteps(ctx, s.env, s.st, s.pat, c, t.Index, stepPlan{point: t.Point, k: t.K, killUS: t.KillUS})
	return engine.Found{}, err
}

// stepPlan is what the first delivery of a trial is subjected to.
type stepPlan struct {
	point  string
	k      int
	killUS int64
}

// trialEnv is one trial's folder, file and receiver. files.Receiver is
// the receiver's bare URL; each process is given its own (sender).
type trialEnv struct {
	dir   string
	files Files
	rcv   *receiver.Receiver
	// senders counts the sender tokens minted for the trial's processes.
	senders int
}

// sender mints the next process's sender token and returns the trial's
// files with the receiver URL that process is given. A trial without a
// receiver mints none.
func (t *trialEnv) sender() (Files, string) {
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

// sendLatency is how long each trial's receiver holds a send before it
// logs it: none in a run; a test sets it to keep a killed worker's last
// request in flight past its death.
var sendLatency time.Duration

// newTrial makes a trial's folder and, for a pattern that sends, starts
// its receiver, fenced unless the condition turns the fence off.
func newTrial(env scenario.Env, pat Pattern, c Condition) (*trialEnv, error) {
	dir, err := os.MkdirTemp(env.TempDir, "idemlab-explore-")
	if err != nil {
		return nil, fmt.Errorf("%w: create database folder: %w", errclass.ErrHarness, err)
	}
	t := &trialEnv{dir: dir, files: Files{DB: filepath.Join(dir, DBName)}}
	if pat.Sends {
		t.rcv, err = receiver.Start(receiver.Config{Fence: pat.Fenced && !c.Unfenced, SendLatency: sendLatency})
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

// runTrialSteps runs one trial: the delivery, then for every kind but
// discovery the pattern's recovery, each process on the same file and
// receiver. It returns the first delivery's process.
func runTrialSteps(ctx context.Context, env scenario.Env, st Settings, pat Pattern, c Condition, i int, sp stepPlan) (*harness.Proc, error) {
	t, err := newTrial(env, pat, c)
	if err != nil {
		return nil, err
	}
	defer t.close()
	fl, tok := t.sender()
	spec := harness.Spec{
		Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("trial %06d delivery", i),
		Worker: pat.Worker, Args: pat.Args(st, fl), CrashAt: sp.point,
		KillAfter: time.Duration(sp.killUS) * time.Microsecond,
	}
	o := Observation{Scenario: Name, Condition: c.Name, Trial: i, Step: StepDelivery, DB: t.files.DB, Receiver: t.files.Receiver, Senders: tokens(tok), Point: sp.point, K: sp.k}
	if sp.k > 0 {
		spec.Env = map[string]string{protocol.EnvCrashAfterHits: strconv.Itoa(sp.k)}
	}
	if sp.killUS > 0 {
		o.KillDelaysUS = []int64{sp.killUS}
	}
	first, rows, err := runStep(ctx, env, pat, t, spec, o)
	if err != nil || c.Kind == KindDiscovery {
		return first, err
	}
	return first, runRecovery(ctx, env, st, pat, t, c, i, rows)
}

// runRecovery runs the pattern's recovery of trial i, process by process,
// from the state rows the step before it left.
func runRecovery(ctx context.Context, env scenario.Env, st Settings, pat Pattern, t *trialEnv, c Condition, i int, rows State) error {
	var done []string
	for {
		fl, tok := t.sender()
		a, ok := pat.nextAction(st, fl, done, rows)
		if !ok {
			return nil
		}
		ro := Observation{Scenario: Name, Condition: c.Name, Trial: i, Step: a.Step, DB: t.files.DB, Receiver: t.files.Receiver, Senders: tokens(tok)}
		if a.LookUp != "" {
			l, err := t.lookUp(ctx, a.LookUp)
			if err != nil {
				return err
			}
			ro.Lookup, a.Args = &l, a.With(l)
		}
		rec := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: label(i, a.Step),
			Worker: a.Worker, Args: a.Args, Exits: []int{protocol.ExitACK},
		}
		var err error
		if _, rows, err = runStep(ctx, env, pat, t, rec, ro); err != nil {
			return err
		}
		done = append(done, a.Step)
	}
}

// lookUp asks the trial's receiver about a send, as the batch scenario's
// parent does before a resolve.
func (t *trialEnv) lookUp(ctx context.Context, key string) (Lookup, error) {
	parts := strings.SplitN(key, ":", 3)
	if t.rcv == nil || len(parts) != 3 {
		return Lookup{}, fmt.Errorf("%w: look up %q: no receiver or not job:item:step", errclass.ErrHarness, key)
	}
	c := wire.NewClient(t.rcv.URL)
	defer c.CloseIdle()
	rc, found, err := c.Lookup(ctx, wire.Key{Job: parts[0], Item: parts[1], Step: parts[2]})
	if err != nil {
		return Lookup{}, fmt.Errorf("%w: look up %s: %w", errclass.ErrHarness, key, err)
	}
	return Lookup{Key: key, Found: found, Receipt: rc}, nil
}

// runStep runs one process, reads the file and records the observation.
func runStep(ctx context.Context, env scenario.Env, pat Pattern, t *trialEnv, spec harness.Spec, o Observation) (*harness.Proc, State, error) {
	proc, err := env.Runner.Run(ctx, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", spec.Condition, spec.Label, err)
	}
	o.ProcessIDs = []int{proc.Record.ID}
	rows, err := observe(ctx, env, pat, t, o)
	return proc, rows, err
}

// observe reads the tables, adds the receiver's log of the whole trial,
// and records the observation.
func observe(ctx context.Context, env scenario.Env, pat Pattern, t *trialEnv, o Observation) (State, error) {
	rows, err := readRows(ctx, env, pat, o.DB)
	if err != nil {
		return nil, fmt.Errorf("%w: %s trial %d %s: read rows: %w", errclass.ErrHarness, o.Condition, o.Trial, o.Step, err)
	}
	if t != nil && t.rcv != nil {
		log, _ := t.rcv.LogSince(0)
		rows[TableSends] = []string{}
		for _, e := range log {
			rows[TableSends] = append(rows[TableSends], SendRow(e))
		}
	}
	o.Rows = rows
	return rows, engine.Record(env.Recorder, o)
}

// readRows reads the pattern's tables as the next process would find them:
// the file db on SQLite, the schema db names on PostgreSQL.
func readRows(ctx context.Context, env scenario.Env, pat Pattern, db string) (State, error) {
	if env.Backend == nil {
		return pat.Read(ctx, db)
	}
	st, _, err := store.Open(ctx, store.BackendPostgres, db, sqlitedb.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return pat.ReadOn(ctx, st)
}

// runRace runs one round: the racers behind the barrier on a fresh
// database (raceDB), on SQLite some killed after the release, then the
// recovery: one process on SQLite, the pattern's whole recovery on
// PostgreSQL.
func runRace(ctx context.Context, env scenario.Env, st Settings, pat Pattern, c Condition, i int, kills []int64) error {
	t, err := raceDB(ctx, env, st, pat, c, i)
	if err != nil {
		return err
	}
	defer t.close()
	racers := make([]harness.Racer, c.Racers)
	var toks []string
	for r := range racers {
		fl, tok := t.sender()
		if tok != "" {
			toks = append(toks, tok)
		}
		racers[r] = harness.Racer{
			Spec: harness.Spec{
				Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("trial %06d racer %02d", i, r),
				Worker: pat.racerOn(st.Backend), Args: RacerArgs(st, pat, fl),
				Exits: []int{protocol.ExitACK, protocol.ExitWorkerError},
			},
			KillAfterRelease: time.Duration(kills[r]) * time.Microsecond,
		}
	}
	procs, err := harness.RunBarrier(ctx, env.Runner, racers)
	if err != nil {
		return fmt.Errorf("%s round %d: %w", c.Name, i, err)
	}
	o := Observation{Scenario: Name, Condition: c.Name, Trial: i, Step: StepRacers, DB: t.files.DB, Receiver: t.files.Receiver, Senders: toks}
	for _, p := range procs {
		o.ProcessIDs = append(o.ProcessIDs, p.Record.ID)
	}
	if c.Kills {
		o.KillDelaysUS = kills
	}
	rows, err := observe(ctx, env, pat, t, o)
	if err != nil {
		return err
	}
	if st.Backend != "" {
		return runRecovery(ctx, env, st, pat, t, c, i, rows)
	}
	rec := harness.Spec{
		Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("trial %06d recovery", i),
		Worker: pat.Worker, Args: pat.Args(st, t.files),
	}
	_, _, err = runStep(ctx, env, pat, nil, rec, Observation{Scenario: Name, Condition: c.Name, Trial: i, Step: StepRecovery, DB: t.files.DB})
	return err
}

// raceDB is a race round's database with the pattern's tables, empty, so
// the racers start from one state and the first statement after the
// release is theirs: a prepared file on SQLite; on PostgreSQL a schema of
// its own, and the pattern's receiver where it sends.
func raceDB(ctx context.Context, env scenario.Env, st Settings, pat Pattern, c Condition, i int) (*trialEnv, error) {
	if st.Backend == "" {
		dir, err := os.MkdirTemp(env.TempDir, "idemlab-explore-")
		if err != nil {
			return nil, fmt.Errorf("%w: create database folder: %w", errclass.ErrHarness, err)
		}
		t := &trialEnv{dir: dir, files: Files{DB: filepath.Join(dir, DBName)}}
		if err := pat.Prepare(ctx, t.files.DB); err != nil {
			t.close()
			return nil, fmt.Errorf("%w: %s round %d: prepare the file: %w", errclass.ErrHarness, c.Name, i, err)
		}
		return t, nil
	}
	srv := env.Backend.WithSpec(st.spec(c))
	db, err := srv.Fresh(ctx, "explore")
	if err != nil {
		return nil, fmt.Errorf("%w: %s round %d: %w", errclass.ErrHarness, c.Name, i, err)
	}
	if err := srv.Setup(ctx, db, pat.Tables(store.Postgres{})); err != nil {
		return nil, fmt.Errorf("%s round %d: %w", c.Name, i, err)
	}
	t := &trialEnv{files: Files{DB: db.Target}}
	if pat.Sends {
		if t.rcv, err = receiver.Start(receiver.Config{Fence: pat.Fenced}); err != nil {
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.files.Receiver = t.rcv.URL
	}
	return t, nil
}
