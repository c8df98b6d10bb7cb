package patternfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/seed"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// Trial kinds.
const (
	KindDiscovery = "discovery"
	KindPoint     = "point"
	KindHits      = "crash-after-hits"
	KindKill      = "kill"
	KindRace      = "race"
	KindPower     = "power"
)

// RecoveryOptions are how the parent cuts a power trial's folder: the
// trial's model; under torn, a seed from the run's seed, the condition and
// the trial, and the run's unit (Settings.Unit). A trial without a model (of
// a folder of format 4 or older) was cut under drop.
func RecoveryOptions(s Settings, o Observation) faultvfs.Options {
	switch o.Model {
	case "", faultvfs.FaultDrop:
		return faultvfs.Options{Fault: faultvfs.FaultDrop}
	case faultvfs.FaultTorn:
		return faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: seed.TornSeed(s.Seed, o.Condition, o.Trial), Unit: s.Unit()}
	}
	return faultvfs.Options{Fault: o.Model}
}

// DBName is each trial's database file.
const DBName = "pattern.sqlite3"

// Observation is one trial: what was done to it, every delivery's process,
// and what the parent read after the last one.
type Observation struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Trial     int    `json:"trial"`
	Kind      string `json:"kind"`
	// Point is the crash point of a point or power trial.
	Point string `json:"point,omitempty"`
	// Model is a power trial's model (engine.PowerModels); empty in folders of
	// format 4 or older, which cut under drop only.
	Model string `json:"model,omitempty"`
	// K is a crash-after-hits trial's hit.
	K int `json:"k,omitempty"`
	// KillUS is a kill trial's delay: from the start, or, for a program
	// whose discovery announced points, from its first point's arrival
	// (KillFromFirst).
	KillUS int64 `json:"kill_us,omitempty"`
	// Racers and RaceCrashK describe a race: the hit at which each racer
	// crashes, 0 for none. A crash at a seeded point, not a kill after a
	// delay, so the fault lands inside the handler whatever the scheduler
	// does.
	Racers     int   `json:"racers,omitempty"`
	RaceCrashK []int `json:"race_crash_k,omitempty"`
	// File is the pattern file the workers read, DB the trial's file and
	// Receiver its receiver's URL; all three are in the command lines.
	File     string `json:"file"`
	DB       string `json:"db"`
	Receiver string `json:"receiver"`
	// Senders says each delivery was given the receiver URL with a sender
	// token of its own (DeliverySender), which the receiver logs with its
	// sends; false in folders of format 4 and older.
	Senders    bool       `json:"senders,omitempty"`
	Deliveries []Delivery `json:"deliveries"`
	// Recovery is what the power cut left, for a power trial.
	Recovery *faultvfs.Report `json:"recovery,omitempty"`
	// PowerFS is a program's power trial's filesystem cut: its op log,
	// models and outcome (powerfs.go).
	PowerFS *PowerFS `json:"powerfs,omitempty"`
	// PGPower is a power trial's cut on PostgreSQL (pgpower.go), in place
	// of Recovery.
	PGPower *backend.PowerOutcome `json:"pg_power,omitempty"`
	// SyncWindow is, on a PostgreSQL power condition's sync discovery,
	// the cluster's mount's fsyncs once Setup had returned and once the
	// first delivery had ended: the sweep cuts at each N past from up to
	// to (pgsync.go). Absent on every other trial.
	SyncWindow *backend.SyncWindow `json:"sync_window,omitempty"`
	// Values are what the parent read of each query invariant after the
	// last delivery: rows, columns, type and text, judged by the fold. A
	// folder of format 4 or older holds a bare integer each.
	Values map[string]wp.Value `json:"values"`
	// Sends are the trial receiver's log.
	Sends []receiver.Entry `json:"sends"`
	// Broker is the trial's broker, with --broker nats.
	Broker *TrialBroker `json:"broker,omitempty"`
}

// Delivery is one delivery's process. A program's delivery also has what
// the parent saw on its points socket.
type Delivery struct {
	ProcessID int   `json:"process_id"`
	Number    int   `json:"number"`
	Worker    int   `json:"worker"`
	OffsetMS  int64 `json:"offset_ms"`
	// Points are the points a program announced, PointsUS when each
	// arrived (microseconds from the start, as the parent saw them),
	// KilledAt the one at which the parent killed it, Stray the lines that
	// were not "point NAME".
	Points   []string `json:"points,omitempty"`
	PointsUS []int64  `json:"points_us,omitempty"`
	KilledAt string   `json:"killed_at,omitempty"`
	Stray    []string `json:"stray,omitempty"`
	TimedOut bool     `json:"timed_out,omitempty"`
	// SocketCut counts the bytes sent on the points socket past its caps,
	// which the parent did not keep.
	SocketCut int64 `json:"socket_cut,omitempty"`
	// Broker is the broker's state, read once the delivery's consumer had
	// exited, with --broker nats.
	Broker *broker.State `json:"broker,omitempty"`
	// Consumer is a program's consumer process on a broker
	// (pattern.consume-program), which ran the program of ProcessID.
	Consumer int `json:"consumer_id,omitempty"`
}

// plan is a run of the settings: its units share them.
type plan struct{ s Settings }

// Run runs the settings' pattern files through the engine with the
// pattern-file subject, each process and observation recorded under the
// scenario named as: pattern's own, or explore's for the article patterns
// it runs from their files. The fold, the oracle and the report read the
// records the same either way. Every pattern's trials go side by side in
// env's slots (or, without, as many as the machine runs).
func Run(ctx context.Context, env scenario.Env, s Settings, as string) error {
	p := &plan{s: s}
	dir, err := os.MkdirTemp(env.TempDir, "idemlab-pattern-")
	if err != nil {
		return fmt.Errorf("%w: create the run's folder: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	if err := p.sweepIfMounts(); err != nil {
		return err
	}
	if err := s.findBroker(); err != nil {
		return err
	}
	if env.Backend != nil {
		if err := checkOnServer(ctx, env, p.s.Patterns); err != nil {
			return err
		}
	}
	var units []engine.Unit
	for i, pat := range p.s.Patterns {
		file := filepath.Join(dir, fmt.Sprintf("pattern-%d.json", i+1))
		b, err := json.Marshal(pat.File)
		if err == nil {
			err = os.WriteFile(file, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("%w: write the pattern for the workers: %w", errclass.ErrHarness, err)
		}
		u, err := p.unit(env, pat, file, as)
		if err != nil {
			return err
		}
		units = append(units, u)
		units = append(units, p.syncUnits(u, pat)...)
	}
	slots := env.SlotsOf(scenario.ParallelOf(0, s.Parallel))
	_, err = engine.Run{Seed: p.s.Seed, Slots: slots, Shard: p.s.Shard, Units: units}.Execute(ctx)
	return err
}

// unit is one pattern as the engine's unit: its discovery, then its
// conditions' sets.
func (p *plan) unit(env scenario.Env, pat Pattern, file, as string) (engine.Unit, error) {
	conds := map[string]Condition{}
	u := engine.Unit{Discovery: pat.File.Name + "/" + FaultNone}
	for _, c := range p.s.Conditions {
		if c.Pattern == pat.File.Name {
			conds[c.Name] = c
			u.Sets = append(u.Sets, p.s.sets(c, false)...)
		}
	}
	r := &runner{env: env, s: p.s, pat: pat, file: file, conds: conds, as: as}
	if pat.File.IsProgram() {
		dir, err := filepath.Abs(pat.Dir)
		if err != nil {
			return u, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		r.progDir = dir
	}
	u.Subject = r
	return u, nil
}

// sets are what condition c asks of the engine: the random class's
// crashes at a hit, then its kills numbered after them; a concurrent
// condition's rounds per racer count, first without crashes, then with;
// any other fault each of its classes (engine.ClassesOf), planned from the
// discovery alone (the points, power). legacy plans power as a folder of
// format 4 or older.
func (s Settings) sets(c Condition, legacy bool) []engine.Set {
	switch c.Fault {
	case wp.FaultRandom:
		return []engine.Set{
			{Class: engine.CrashAtHit, Condition: c.Name, Indices: engine.Count(0, s.HitTrials)},
			{Class: engine.DelayKill, Condition: c.Name, Indices: engine.Count(s.HitTrials, s.KillTrials)},
		}
	case wp.FaultConcurrent:
		var out []engine.Set
		n := 0
		for _, k := range s.Racers {
			for _, fault := range []engine.Kind{engine.None, engine.CrashAtHit} {
				out = append(out, engine.Set{Class: engine.Concurrent, Condition: c.Name, Indices: engine.Count(n, s.Rounds), Racers: k, RaceFault: fault})
				n += s.Rounds
			}
		}
		return out
	}
	var out []engine.Set
	for _, k := range engine.ClassesOf(c.Fault) {
		if k != engine.None {
			out = append(out, engine.Set{Class: k, Condition: c.Name, Legacy: legacy})
		}
	}
	return out
}

// plan lists condition c's trials, every shard's, from the discovered
// points.
func (s Settings) plan(c Condition, legacy bool, points []string) []engine.Trial {
	ts, _ := engine.Plan(context.Background(), s.Seed, nil, s.sets(c, legacy), engine.Found{Points: points})
	return ts
}

// runner is a pattern file or program as the engine's subject.
type runner struct {
	// as is the scenario the records are made under.
	as    string
	ctx   context.Context
	env   scenario.Env
	s     Settings
	pat   Pattern
	file  string
	conds map[string]Condition
	// progDir is where a program runs, and ready whether its discovery
	// delivery's first point was "ready".
	progDir string
	ready   bool
	// fromFirst is KillFromFirst: a kill trial's delay runs from the
	// program's first point.
	fromFirst bool
	// last is the last point the discovery delivery announced, where a
	// program's ack-open cut comes.
	last string
}

// KillFromFirst says whether a pattern's delay kills run from the first
// point's arrival: a program whose discovery announced points. The
// built-in worker, and a program without points, are killed after a delay
// from the start.
func KillFromFirst(pat Pattern, points []string) bool {
	return pat.File.IsProgram() && len(points) > 0
}

// KillWindowUS is the span the delay kills are drawn over, from what the
// parent measured of the discovery delivery: for a program with points,
// from its first point's arrival (its "ready", where it has one) to its
// end, so no kill lands in an interpreter's start-up; otherwise the whole
// delivery.
func KillWindowUS(pat Pattern, durationMS float64, pointsUS []int64) int64 {
	if pat.File.IsProgram() && len(pointsUS) > 0 {
		return engine.KillWindowUS(durationMS, pointsUS[0])
	}
	return engine.KillWindowUS(durationMS, 0)
}

// Deliver runs one trial; the discovery's also sets what the others
// need of it.
func (r *runner) Deliver(ctx context.Context, t engine.Trial) (engine.Found, error) {
	rc := *r
	rc.ctx = ctx
	if c := r.conds[t.Condition]; t.Class == engine.None && c.Fault == wp.FaultPower {
		d, err := rc.trial(c, syncDiscovery(), nil)
		return engine.Found{SyncsFrom: d.syncsFrom, Syncs: d.syncs}, err
	}
	o := observed(t)
	err := runs(t.Class)
	if err == nil {
		err = applies(r.conds[t.Condition], t, r.pat.File.IsProgram(), r.s.Broker != nil)
	}
	if err != nil {
		return engine.Found{}, fmt.Errorf("%w: %s trial %d: the pattern subject does not run fault class %s: %w", errclass.ErrHarness, t.Condition, t.Index, t.Class, err)
	}
	d, err := rc.trial(r.conds[t.Condition], o, nil)
	if err != nil || t.Class != engine.None {
		return engine.Found{}, err
	}
	r.ready = len(d.points) > 0 && d.points[0] == wp.PointReady
	r.fromFirst = KillFromFirst(r.pat, d.points)
	if len(d.points) > 0 {
		r.last = d.points[len(d.points)-1]
	}
	return engine.Found{Points: d.points, WindowUS: KillWindowUS(r.pat, d.durationMS, d.pointsUS)}, nil
}

// discovered is what a discovery trial tells the rest of the run.
type discovered struct {
	points     []string
	pointsUS   []int64
	durationMS float64
	// syncs are the fsyncs a sync discovery's mount saw; on PostgreSQL
	// syncsFrom those it had seen before the delivery (its window).
	syncs, syncsFrom int
}

// trial runs one trial from a fresh file to the parent's reading of it.
func (r runner) trial(c Condition, o Observation, _ any) (discovered, error) {
	var d discovered
	dir, err := os.MkdirTemp(r.env.TempDir, "idemlab-pattern-trial-")
	if err != nil {
		return d, fmt.Errorf("%w: create a trial's folder: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	rcv, err := receiver.Start(receiver.Config{})
	if err != nil {
		return d, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	defer rcv.Close()
	o.Scenario, o.Condition, o.File, o.DB, o.Receiver, o.Senders = r.as, c.Name, r.file, filepath.Join(dir, DBName), rcv.URL, true
	t := &trial{r: r, c: c, o: &o, dir: dir, db: backend.Database{Backend: store.BackendSQLite, Target: o.DB}}
	if r.env.Backend != nil && onServerPower(c) {
		cfg := backend.PowerConfig{Settings: backend.ParsePowerName(c.Power), Params: powerParams(r.s, o)}
		if sc, ok := syncCutOf(o); ok {
			cfg.CutSync, cfg.CutAfter = sc.N, sc.After
		}
		ddl := strings.Join(r.pat.File.SchemaOn(store.BackendPostgres), ";\n")
		if t.pc, err = r.env.Backend.StartPowerTrial(r.ctx, r.env.TempDir, cfg, r.s.pgSpec(c), pgPowerSchema, ddl, t.recording()); err != nil {
			return d, fmt.Errorf("%w: %s trial %d: %w", errclass.ErrHarness, c.Name, o.Trial, err)
		}
		defer t.pc.Close()
		t.db = t.pc.DB
		o.DB = t.db.Target
		if err := t.windowFrom(); err != nil {
			return d, err
		}
	} else if r.env.Backend != nil {
		if t.db, err = r.env.Backend.Fresh(r.ctx, "pattern"); err != nil {
			return d, fmt.Errorf("%w: %s trial %d: %w", errclass.ErrHarness, c.Name, o.Trial, err)
		}
		o.DB = t.db.Target
	}
	if t.c.Fault == wp.FaultPower && r.pat.File.IsProgram() && !onServerPower(c) {
		t.backing = filepath.Join(dir, "backing")
		t.db.Target = filepath.Join(t.backing, DBName)
		defer func() { _ = t.fs.Close() }()
	}
	if err := t.prepare(); err != nil {
		return d, fmt.Errorf("%w: %s trial %d: prepare the file: %w", errclass.ErrHarness, c.Name, o.Trial, err)
	}
	if r.s.Broker != nil {
		err := t.startBroker()
		if t.br != nil {
			defer t.br.Close()
		}
		if err != nil {
			return d, fmt.Errorf("%w: %s trial %d: %w", errclass.ErrHarness, c.Name, o.Trial, err)
		}
	}
	first, err := t.first()
	if err != nil {
		return d, err
	}
	if len(first) == 1 {
		d.points, d.pointsUS, d.durationMS = first[0].points, first[0].pointsUS, first[0].durationMS
	}
	if err := t.redeliver(first); err != nil {
		return d, err
	}
	if err := t.fs.Close(); err != nil {
		return d, fmt.Errorf("%w: %s trial %d: %w", errclass.ErrHarness, c.Name, o.Trial, err)
	}
	if o.PowerFS != nil {
		o.PowerFS.ServerProcessIDs = t.fs.ServerIDs()
		d.syncs = o.PowerFS.Outcome.Syncs
	}
	if w := o.SyncWindow; w != nil {
		d.syncsFrom, d.syncs = w.From, w.To
	}
	if err := t.observe(rcv); err != nil {
		return d, err
	}
	return d, nil
}

type trial struct {
	r   runner
	c   Condition
	o   *Observation
	dir string
	// db is the trial's database: the file in dir on SQLite, a schema of
	// its own on PostgreSQL.
	db backend.Database
	// backing is a program power trial's backing folder, the only one the
	// parent reads, and fs its mount, once the first delivery starts.
	backing string
	fs      *powerlayer.Trial
	// killOn, when set, kills the first delivery: its mount froze at
	// the trial's sync (syncpoints.go).
	killOn <-chan struct{}
	// pc is a power trial's own cluster on PostgreSQL (pgpower.go).
	pc *backend.PowerTrial
	// br is the trial's broker, with --broker nats.
	br broker.Trial
}

// env is what every process of the trial runs with: the power-loss VFS
// and the condition's settings for a power trial, nothing otherwise.
func (t *trial) env() map[string]string {
	if t.c.Fault != wp.FaultPower || onServerPower(t.c) {
		return nil
	}
	j, sy, _ := strings.Cut(t.c.Power, "/")
	return map[string]string{protocol.EnvVFS: protocol.VFSFault, protocol.EnvJournalMode: j, protocol.EnvSynchronous: sy}
}

// options are the parent's settings for the trial's file: the
// condition's, so its own reads change nothing a worker would not.
func (t *trial) options() sqlitedb.Options {
	o := wp.Options(t.o.DB)
	if t.backing != "" {
		o = wp.Options(filepath.Join(t.backing, DBName))
	}
	if t.c.Fault == wp.FaultPower && !onServerPower(t.c) {
		o.JournalMode, o.Synchronous = SplitPower(t.c.Power)
	}
	return o
}

func (t *trial) prepare() error {
	if t.pc != nil {
		return nil // made by StartPowerTrial
	}
	if t.r.env.Backend != nil {
		return t.r.env.Backend.Setup(t.r.ctx, t.db, strings.Join(t.r.pat.File.SchemaOn(store.BackendPostgres), ";\n"))
	}
	if t.backing != "" {
		if err := os.MkdirAll(t.backing, 0o755); err != nil {
			return err
		}
	}
	db, _, err := sqlitedb.Open(t.r.ctx, t.options())
	if err != nil {
		return err
	}
	for i, stmt := range t.r.pat.File.Schema {
		if _, err := db.ExecContext(t.r.ctx, stmt); err != nil {
			db.Close()
			return fmt.Errorf("schema[%d]: %w", i, err)
		}
	}
	if err := db.Close(); err != nil {
		return err
	}
	if t.c.Fault == wp.FaultPower && t.backing == "" {
		return faultvfs.Baseline(t.dir)
	}
	return nil
}

// Exits a delivery may end with; anything else is recorded and judged.
var exits = []int{protocol.ExitACK, protocol.ExitCrash, protocol.ExitStepFailed, protocol.ExitWorkerError, protocol.ExitUsage}

// Args are the worker arguments of one delivery; the fold rebuilds them
// to check each recorded command line.
func Args(s Settings, o Observation, d Delivery) wp.Args {
	a := wp.Args{File: o.File, DB: o.DB, EventID: s.EventID, Delivery: d.Number, Worker: d.Worker, NowOffsetMS: d.OffsetMS, Receiver: ReceiverOf(o, d), Backend: s.Backend}
	if o.race() && d.Number == 1 {
		a.ReadyFD = harness.BarrierReadyFD
	}
	return a
}

// DeliverySender is the sender token of delivery d of trial o: the trial's
// first deliveries (one, or a race's racers by worker) are p1 onwards, and
// each redelivery follows them. Empty when o gives no tokens (format 4).
func DeliverySender(o Observation, d Delivery) string {
	if !o.Senders {
		return ""
	}
	if d.Number <= 1 {
		return wire.Token(d.Worker + 1)
	}
	return wire.Token(max(1, o.Racers) + d.Number - 1)
}

// ReceiverOf is the receiver URL delivery d is given: the trial's, with
// the delivery's sender token as a path prefix.
func ReceiverOf(o Observation, d Delivery) string {
	if tok := DeliverySender(o, d); tok != "" {
		return wire.SenderURL(o.Receiver, tok)
	}
	return o.Receiver
}

// Env is the environment of one delivery; the fold checks it.
func Env(c Condition, o Observation, d Delivery) map[string]string {
	t := trial{c: c, o: &o}
	env := t.env()
	if d.Number == 1 {
		if env == nil {
			env = map[string]string{}
		}
		f := firstFault(c, o, d.Worker)
		if f.Hit > 0 {
			env[protocol.EnvCrashAfterHits] = fmt.Sprint(f.Hit)
		}
		if f.At != "" {
			env[protocol.EnvCrashAt] = f.At
		}
		if f.AckOpen {
			env[protocol.EnvAckOpen] = "1"
		}
		if f.Power && f.crashes() {
			env[protocol.EnvCrashKind] = protocol.CrashKindPower
		}
	}
	if len(env) == 0 {
		return nil
	}
	return env
}

func (t *trial) spec(d Delivery) harness.Spec {
	env := Env(t.c, *t.o, d)
	crashAt := env[protocol.EnvCrashAt]
	delete(env, protocol.EnvCrashAt)
	worker, args := wp.WorkerName, Args(t.r.s, *t.o, d).Argv()
	if t.br != nil {
		worker, args = wp.ConsumerName, ConsumeArgs(t.r.s, t.c, *t.o, d).Argv()
	}
	return harness.Spec{
		Scenario: t.r.as, Condition: t.c.Name, Label: fmt.Sprintf("trial %d delivery %d.%d", t.o.Trial, d.Number, d.Worker),
		Worker: worker, Args: args, Env: env, CrashAt: crashAt, Exits: exits,
	}
}

// delivered is what the rest of a trial needs of one delivery.
type delivered struct {
	acked      bool
	points     []string
	pointsUS   []int64
	durationMS float64
}

// ackedRecord says whether a delivery acknowledged the event: it exited 0
// (the ACK that follows the last step), or the built-in worker passed its
// handler's ack step, whatever came after (wp.AckLine): a crash or a kill
// after an ACK is not redelivered.
func ackedRecord(r results.ProcessRecord) bool {
	return r.ExitCode == protocol.ExitACK && r.Signal == "" || ackedEarly(r)
}

// ackedEarly says whether the built-in worker's ack step acknowledged the
// delivery; a program's standard error is its own and acks nothing.
func ackedEarly(r results.ProcessRecord) bool {
	return (r.Worker == wp.WorkerName || r.Worker == wp.ConsumerName) && wp.AckedOnStderr(r.Stderr)
}

// first runs the trial's first delivery, or its racers.
func (t *trial) first() ([]delivered, error) {
	if t.backing != "" {
		return t.powerFirst()
	}
	if t.r.pat.File.IsProgram() {
		ended := t.killAtClusterSync()
		out, err := t.firstProgram()
		ended()
		if err != nil || t.pc == nil {
			return out, err
		}
		if err := t.windowTo(); err != nil {
			return nil, err
		}
		if err := t.cutCluster(); err != nil {
			return nil, err
		}
		if ackOpenCut(t.r.pat, t.c, *t.o, t.o.Deliveries[0]) {
			out[0].acked = true
		}
		return out, nil
	}
	if t.o.race() {
		racers := make([]harness.Racer, t.o.Racers)
		for i := range racers {
			racers[i] = harness.Racer{Spec: t.spec(Delivery{Number: 1, Worker: i})}
		}
		procs, err := harness.RunBarrier(t.r.ctx, t.r.env.Runner, racers)
		if err != nil {
			return nil, fmt.Errorf("%s trial %d: %w", t.c.Name, t.o.Trial, err)
		}
		var out []delivered
		for i, p := range procs {
			t.o.Deliveries = append(t.o.Deliveries, Delivery{ProcessID: p.Record.ID, Number: 1, Worker: i})
			out = append(out, delivered{acked: ackedRecord(p.Record)})
		}
		return out, nil
	}
	d := Delivery{Number: 1}
	spec := t.spec(d)
	spec.KillAfter = time.Duration(t.o.KillUS) * time.Microsecond
	proc, err := t.r.env.Runner.Run(t.r.ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%s trial %d: %w", t.c.Name, t.o.Trial, err)
	}
	d.ProcessID = proc.Record.ID
	t.o.Deliveries = append(t.o.Deliveries, d)
	if t.pc != nil {
		if err := t.cutCluster(); err != nil {
			return nil, err
		}
	} else if firstFault(t.c, *t.o, 0).Power {
		rep, err := faultvfs.RecoverWith(t.dir, RecoveryOptions(t.r.s, *t.o))
		if err != nil {
			return nil, fmt.Errorf("%w: %s trial %d: %w", errclass.ErrHarness, t.c.Name, t.o.Trial, err)
		}
		t.o.Recovery = &rep
		if err := faultvfs.Baseline(t.dir); err != nil {
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	}
	acked := ackedRecord(proc.Record)
	if t.br != nil {
		if acked, err = t.brokerWord(); err != nil {
			return nil, err
		}
	}
	return []delivered{{acked: acked, points: proc.Report.Points, durationMS: proc.Record.DurationMS}}, nil
}

// cutCluster cuts the power of a PostgreSQL power trial's cluster after
// its first delivery and records the cut.
func (t *trial) cutCluster() error {
	cut, err := t.pc.Cut(t.r.ctx)
	if err != nil {
		return fmt.Errorf("%w: %s trial %d: power cut: %w", errclass.ErrHarness, t.c.Name, t.o.Trial, err)
	}
	t.o.PGPower = &cut
	return nil
}

// redeliver delivers the event again to fresh processes until one ACKs or
// the pattern's max_deliveries is reached. A race always gets one
// recovery delivery, whatever its racers did.
func (t *trial) redeliver(first []delivered) error {
	acked := !t.o.race() && first[0].acked
	for n := 2; n <= t.r.pat.MaxDeliveries && !acked; n++ {
		d := Delivery{Number: n, OffsetMS: t.r.pat.File.RedeliveryAfterMS}
		if t.r.pat.File.IsProgram() {
			got, err := t.runProgram(d, nil)
			if err != nil {
				return err
			}
			acked = got.acked
			continue
		}
		proc, err := t.r.env.Runner.Run(t.r.ctx, t.spec(d))
		if err != nil {
			return fmt.Errorf("%s trial %d: %w", t.c.Name, t.o.Trial, err)
		}
		d.ProcessID = proc.Record.ID
		t.o.Deliveries = append(t.o.Deliveries, d)
		acked = ackedRecord(proc.Record)
		if t.br != nil {
			// The broker's word decides: it redelivers until its ack
			// floor reaches the message, or MaxDeliver.
			if acked, err = t.brokerWord(); err != nil {
				return err
			}
		}
	}
	return nil
}

// observe reads what the trial left, as the parent's own witness, and
// records it.
func (t *trial) observe(rcv *receiver.Receiver) error {
	var err error
	if t.o.PGPower != nil && !t.o.PGPower.Started {
		// A cut under fsync=off may leave a folder the server does not
		// start on: an outcome, every invariant unreadable.
		t.o.Values = noServerValues(t.r.pat.File)
	} else {
		var st store.Store
		if st, err = t.db.Open(t.r.ctx, t.options()); err == nil {
			t.o.Values, err = wp.QueryValues(t.r.ctx, st, t.r.pat.File, t.r.s.EventID)
			err = errors.Join(err, st.Close())
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s trial %d: read the invariants: %w", errclass.ErrHarness, t.c.Name, t.o.Trial, err)
	}
	t.o.Sends, _ = rcv.LogSince(0)
	if t.pc != nil && t.o.PGPower != nil {
		if err := t.pc.Finish(t.o.PGPower); err != nil {
			return fmt.Errorf("%w: %s trial %d: stop the restarted server: %w", errclass.ErrHarness, t.c.Name, t.o.Trial, err)
		}
	}
	return engine.Record(t.r.env.Recorder, t.o)
}

// checkOnServer prepares every pattern's statements on the run's
// PostgreSQL server, each pattern in a scratch schema of its own, before
// any trial: SQL the server cannot run is refused (exit 2) naming the
// file, the field and the server's message, as SQLite's check does at
// plan time.
func checkOnServer(ctx context.Context, env scenario.Env, pats []Pattern) error {
	for _, pat := range pats {
		err := env.Backend.Scratch(ctx, "pattern_check", func(st store.Store) error { return wp.CheckOn(ctx, st, pat.File) })
		var refusal *wp.Error
		switch {
		case errors.As(err, &refusal):
			return fmt.Errorf("%w: pattern file %s: on %s: %w", errclass.ErrUsage, pat.Source, store.BackendPostgres, err)
		case errors.Is(err, errclass.ErrHarness):
			return err
		case err != nil:
			return fmt.Errorf("%w: check pattern file %s on the server: %w", errclass.ErrHarness, pat.Source, err)
		}
	}
	return nil
}
