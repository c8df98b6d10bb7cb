package deliver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/seed"
	"idemlab/experiments/shard"
	"idemlab/experiments/subject"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
)

// The fold reads what Runner recorded: per condition, each trial's steps
// as subject.Observations and their processes. It checks every process
// against what the runner chose (label, argv, environment, sender token,
// exit and report), replays each recovery from the subject's model over
// the recorded states, recomputes every k and delay from the seed, and
// judges each trial's history by the subject's invariants. Its figures
// per fault class are the types below; a scenario's oracle reads them.

// DiscoveryObserved is what a pattern's discovery delivery passed.
type DiscoveryObserved struct {
	Points     []string `json:"points"`
	DurationMS float64  `json:"duration_ms" idemlab:"measure"`
}

// PointOutcome is one sweep trial: the crash point, the outcome after the
// recovery and the invariants it broke.
type PointOutcome struct {
	Point      string   `json:"point"`
	Outcome    string   `json:"outcome"`
	Violations []string `json:"violations"`
}

// SweepObserved is a pattern's sweep.
type SweepObserved struct {
	Points          []string       `json:"points"`
	Outcomes        []PointOutcome `json:"outcomes"`
	ViolatingPoints []string       `json:"violating_points"`
}

// HitTrial is one crash-after-hits trial.
type HitTrial struct {
	Trial     int    `json:"trial"`
	K         int    `json:"k"`
	CrashedAt string `json:"crashed_at"`
	Outcome   string `json:"outcome"`
}

// HitsObserved is a crash-after-hits condition: replayable, so every
// figure is compared by verify --rerun.
type HitsObserved struct {
	Trials          int            `json:"trials"`
	Histogram       map[string]int `json:"histogram"`
	ViolatingTrials int            `json:"violating_trials"`
	PerTrial        []HitTrial     `json:"per_trial"`
}

// TimingObserved is a kill or race condition. Only the trial count
// replays; everything the scheduler decided is under Timing.
type TimingObserved struct {
	Trials int           `json:"trials"`
	Timing TimingFigures `json:"timing" idemlab:"measure"`
}

// TimingFigures are a kill or race condition's scheduled figures.
type TimingFigures struct {
	Histogram       map[string]int `json:"histogram"`
	ViolatingTrials int            `json:"violating_trials"`
	// Kills counts scheduled SIGKILLs; Landed those that killed a
	// running worker; the rest fired after it had finished or not at all.
	Kills  int `json:"kills"`
	Landed int `json:"landed"`
	// RacerEnds counts racers by how they ended: ack, killed, or the
	// class of the error they reported.
	RacerEnds  map[string]int `json:"racer_ends,omitempty"`
	BusyErrors int            `json:"busy_errors"`
	Retries    int            `json:"retries"`
	// SerializationErrors are the 40001 and 40P01 failures racers met
	// and ran again, on PostgreSQL.
	SerializationErrors int           `json:"serialization_errors,omitempty"`
	PerTrial            []TimingTrial `json:"per_trial"`
}

// TimingTrial is one kill trial or race round.
type TimingTrial struct {
	Trial        int     `json:"trial"`
	KillDelaysUS []int64 `json:"kill_delays_us,omitempty"`
	Landed       int     `json:"landed"`
	Outcome      string  `json:"outcome"`
}

// ViolationRecord is one broken invariant with what replays the trial.
type ViolationRecord struct {
	Condition    string  `json:"condition"`
	Pattern      string  `json:"pattern"`
	Kind         string  `json:"kind"`
	Trial        int     `json:"trial"`
	Seed         uint64  `json:"seed"`
	Point        string  `json:"point,omitempty"`
	K            int     `json:"k,omitempty"`
	KillDelaysUS []int64 `json:"kill_delays_us,omitempty"`
	Racers       int     `json:"racers,omitempty"`
	Invariant    string  `json:"invariant"`
	Detail       string  `json:"detail"`
	Replay       string  `json:"replay"`
}

// Tables are what the fold derives beside each condition's figure; a
// scenario's extra embeds them, so their keys are the extra's.
type Tables struct {
	Seed       uint64              `json:"seed"`
	Discovered map[string][]string `json:"discovered_points"`
	// KillWindowUS is each subject's kill delay range, from discovery.
	KillWindowUS map[string]int64 `json:"kill_window_us" idemlab:"measure"`
	// Violations are the replayable ones (sweep, crash-after-hits);
	// TimingViolations come from kills and races.
	Violations       []ViolationRecord `json:"violations"`
	TimingViolations []ViolationRecord `json:"timing_violations" idemlab:"measure"`
	// LateSends are the sends the receiver logged after the parent had
	// seen their sender end; when they land is the scheduler's choice.
	LateSends []receiver.LateSend `json:"late_sends,omitempty" idemlab:"measure"`
}

// Condition is one condition of a run as the fold reads it: its subject,
// its fault class, and what the runner's Cond asked.
type Condition struct {
	Name    string
	Subject string
	// Label is the scenario's word for the condition's kind, which a
	// ViolationRecord records.
	Label   string
	Class   engine.Kind
	Indices []int
	Racers  int
	Cond
}

// Set is what the condition asks of the engine; a race with kills kills
// its racers after seeded delays.
func (c Condition) Set() engine.Set {
	s := engine.Set{Class: c.Class, Condition: c.Name, Indices: c.Indices, Racers: c.Racers}
	if c.Kills {
		s.RaceFault = engine.DelayKill
	}
	return s
}

// Trials are the engine's plan of c over points, the part's share of it;
// none for the discovery, which every part runs.
func (c Condition) Trials(seed uint64, part *shard.Part, points []string) []engine.Trial {
	if c.Class == engine.None {
		return nil
	}
	ts, _ := engine.Plan(context.Background(), seed, part, []engine.Set{c.Set()}, engine.Found{Points: points})
	return ts
}

// Folding is what the fold needs of a run of Runner: the scenario and
// file name the runner was given, the seed, the subjects' parameters, the
// subjects by name and the conditions in order; Replay is the command a
// violation's record names.
type Folding struct {
	Scenario   string
	DBName     string
	Seed       uint64
	Params     subject.Params
	Subjects   map[string]subject.Subject
	Conditions []Condition
	Replay     func(c Condition, trial int) string
}

// entry is one line of observations.jsonl, decoded: the one value the
// fold's checks of a step take.
type entry struct {
	l results.Line
	o subject.Observation
}

// condFold is one condition as the fold sees it: its subject, the points
// the subject's discovery passed, and its recorded steps by trial.
type condFold struct {
	pat    subject.Subject
	c      Condition
	points []string
	trials map[int][]entry
}

// folder carries one fold's state.
type folder struct {
	c     results.Checker
	p     Folding
	rec   results.Records
	dbs   engine.Places
	extra Tables
	// windows are each subject's kill windows by shard: in a merged
	// folder every shard measured its own discovery run.
	windows map[string]map[int]int64
	ran     []shard.Ran
}

// Fold derives every condition from the records alone: the points each
// discovery passed, each trial's k and delays recomputed from the seed and
// checked against what was recorded, each process's argv, environment,
// exit and report, the rows against the settings and the workers' claims,
// and the invariants over each trial's history.
func (p Folding) Fold(rec results.Records) (scenario.Folded, Tables, []results.Finding) {
	f := &folder{p: p, rec: rec, dbs: engine.Places{}, windows: map[string]map[int]int64{}, extra: Tables{
		Seed: p.Seed, Discovered: map[string][]string{}, KillWindowUS: map[string]int64{},
		Violations: []ViolationRecord{}, TimingViolations: []ViolationRecord{},
	}}
	folded := scenario.Folded{Observed: map[string]any{}}
	trials := f.group()
	points := map[string][]string{}
	for _, c := range p.Conditions {
		pat, ok := p.Subjects[c.Subject]
		if !ok {
			f.c.Add(results.ResultsFile, "scenarios["+p.Scenario+"].settings.conditions", "condition %s names pattern %q, not in the settings' patterns", c.Name, c.Subject)
			continue
		}
		cf := condFold{pat: pat, c: c, points: points[c.Subject], trials: trials[c.Name]}
		f.checkTrials(cf)
		switch c.Class {
		case engine.None:
			if obs, ok := f.discoveries(cf); ok {
				points[c.Subject] = obs.Points
				f.extra.Discovered[c.Subject] = obs.Points
				f.extra.KillWindowUS[c.Subject] = engine.KillWindowUS(obs.DurationMS, 0)
				folded.Observed[c.Name] = obs
			}
		case engine.Points:
			folded.Observed[c.Name] = f.sweep(cf)
		case engine.CrashAtHit:
			folded.Observed[c.Name] = f.hits(cf)
		case engine.DelayKill:
			folded.Observed[c.Name] = f.kills(cf)
		case engine.Concurrent:
			folded.Observed[c.Name] = f.races(cf)
		case engine.Takeover:
			folded.Observed[c.Name] = f.takeover(cf)
		}
	}
	f.c.Unused(rec, 1)
	folded.Plan, folded.Discovered, folded.Ran = f.plan(points), f.extra.Discovered, f.ran
	return folded, f.extra, f.c.Findings
}

// discoveries folds each shard's discovery run of a subject: one in a
// folder of one run, one per shard in a merged folder. The first stands
// for the plan's; every other must have passed the same points, and
// gives its shard's kill window.
func (f *folder) discoveries(cf condFold) (DiscoveryObserved, bool) {
	byShard := map[int][]entry{}
	for _, e := range cf.trials[0] {
		byShard[e.l.Shard] = append(byShard[e.l.Shard], e)
	}
	if len(byShard) == 0 {
		return DiscoveryObserved{}, false
	}
	order := slices.Sorted(maps.Keys(byShard))
	first := f.discovery(cf, byShard[order[0]])
	windows := map[int]int64{}
	for _, sh := range order {
		obs := first
		if sh != order[0] {
			obs = f.discovery(cf, byShard[sh])
			results.SameDiscovery(&f.c, byShard[sh][0].l, order[0], "discovery passed", obs.Points, first.Points)
		}
		windows[sh] = engine.KillWindowUS(obs.DurationMS, 0)
	}
	f.windows[cf.c.Subject] = windows
	return first, true
}

// window is the kill window the trial of line l was drawn over: its
// shard's discovery run's.
func (f *folder) window(subj string, l results.Line) int64 {
	return f.windows[subj][l.Shard]
}

// plan lists every trial of the whole plan, and the points it depends on;
// discovery runs are not trials of it, since every shard runs them.
func (f *folder) plan(points map[string][]string) []shard.Trial {
	out := []shard.Trial{}
	for _, c := range f.p.Conditions {
		out = append(out, engine.Listed(c.Trials(f.p.Seed, nil, points[c.Subject]))...)
	}
	return out
}

// group decodes the observations and groups them by condition and trial,
// in the order recorded.
func (f *folder) group() map[string]map[int][]entry {
	conds := map[string]Condition{}
	for _, c := range f.p.Conditions {
		conds[c.Name] = c
	}
	trials := map[string]map[int][]entry{}
	engine.Each(&f.c, f.rec, "an "+f.p.Scenario+" observation", conds, func(l results.Line, o subject.Observation, _ Condition) {
		if trials[o.Condition] == nil {
			trials[o.Condition] = map[int][]entry{}
		}
		trials[o.Condition][o.Trial] = append(trials[o.Condition][o.Trial], entry{l, o})
	})
	return trials
}

// checkTrials checks that each recorded trial is one the settings (and,
// for a sweep or takeover, the points) give the condition, and lists it
// as ran; scenario.JudgePlan names the trials of the plan that are
// missing. A discovery run is not a trial of the plan: its absence is
// named here.
func (f *folder) checkTrials(cf condFold) {
	var want []int
	switch cf.c.Class {
	case engine.None:
		want = []int{0}
	case engine.Points, engine.Takeover:
		for i := range cf.points {
			want = append(want, i)
		}
	default:
		want = cf.c.Indices
	}
	for _, i := range slices.Sorted(maps.Keys(cf.trials)) {
		if !slices.Contains(want, i) {
			f.c.Obs(cf.trials[i][0].l, "trial", "%d is not a trial of condition %s", i, cf.c.Name)
		}
		if cf.c.Class != engine.None {
			f.ran = append(f.ran, engine.Trial{Condition: cf.c.Name, Index: i}.Ran(cf.trials[i][0].l.Shard))
		}
	}
	if cf.c.Class != engine.None {
		// scenario.JudgePlan names the plan's trials that are missing,
		// in this run's part of the plan.
		return
	}
	missing := slices.DeleteFunc(slices.Clone(want), func(i int) bool { _, ok := cf.trials[i]; return ok })
	if len(missing) > 0 {
		f.c.AddTo(cf.c.Name, results.ObservationsFile, "condition "+cf.c.Name, "trials %v are not recorded; the settings run %d", missing, len(want))
	}
}

// procWant is what the run chose for one process.
type procWant struct {
	label   string
	role    string
	worker  string
	args    []string
	env     map[string]string
	crashAt string
	k       int
	kill    bool
	racer   bool
	// sender is the process's sender token; empty in a folder of format
	// 4 or older.
	sender string
}

// ran is one process as the fold checked it: its history step and, when
// it reported, its report.
type ran struct {
	id     int
	sender string
	step   subject.Step
	rep    *protocol.Report
	ok     bool
}

// proc checks one process of entry e against what the observation implies
// and returns it as a history step, with its report when it made one.
func (f *folder) proc(e entry, id int, w procWant) ran {
	r := ran{id: id, sender: w.sender, step: subject.Step{Role: w.role, Rows: e.o.Rows}}
	p, ok := f.c.Use(f.rec, e.l, id)
	if !ok {
		return r
	}
	if p.Label != w.label {
		f.c.Proc(p, "label", "is %q, the observation's trial and step give %q", p.Label, w.label)
	}
	f.c.Argv(p, w.worker, w.args)
	f.c.Env(p, w.env)
	r.step.ExitCode, r.step.Signal = p.ExitCode, p.Signal
	if p.KilledBy != "" && (p.KilledBy != "harness" || !w.kill) {
		f.c.Proc(p, "killed_by", "is %q, but the run scheduled no kill of this process", p.KilledBy)
	}
	if p.Signal != "" {
		if !w.kill || p.KilledBy != "harness" || p.Signal != "killed" {
			f.c.Proc(p, "signal", "%q (killed_by %q): only the harness's scheduled SIGKILL may end a worker by a signal", p.Signal, p.KilledBy)
		}
		r.ok = true
		return r
	}
	rep, err := protocol.ParseReport(p.Stdout)
	if err != nil {
		f.c.Proc(p, "stdout", "%s: %v", p.Label, err)
		return r
	}
	if rep.Worker != p.Worker {
		f.c.Proc(p, "stdout", "the report names worker %q, the record says %q", rep.Worker, p.Worker)
	}
	r.step.CrashedAt = rep.CrashedAt
	f.exit(p, rep, w)
	r.rep, r.ok = &rep, true
	return r
}

// exit checks a reporting process's exit code against its report and what
// the run set: 0 without a crash, 17 at the set point or hit, 3 only for
// a racer that says what went wrong.
func (f *folder) exit(p results.Process, rep protocol.Report, w procWant) {
	switch p.ExitCode {
	case protocol.ExitACK:
		if rep.CrashedAt != "" || rep.Error != "" {
			f.c.Proc(p, "exit_code", "0, but the report says crashed_at %q, error %q", rep.CrashedAt, rep.Error)
		}
		if w.crashAt != "" || w.k > 0 {
			f.c.Proc(p, "exit_code", "0, but a crash was set (%s)", results.Compact(w.env))
		}
	case protocol.ExitCrash:
		n := len(rep.Points)
		switch {
		case w.crashAt != "" && (rep.CrashedAt != w.crashAt || n == 0 || rep.Points[n-1] != w.crashAt):
			f.c.Proc(p, "exit_code", "17 at %q after %v, but the harness set %s=%q", rep.CrashedAt, rep.Points, protocol.EnvCrashAt, w.crashAt)
		case w.k > 0 && (n != w.k || rep.CrashedAt != rep.Points[n-1]):
			f.c.Proc(p, "exit_code", "17 at %q after %d hits, but the harness set %s=%d", rep.CrashedAt, n, protocol.EnvCrashAfterHits, w.k)
		case w.crashAt == "" && w.k == 0:
			f.c.Proc(p, "exit_code", "17 (crash), but no crash was set")
		}
	case protocol.ExitWorkerError:
		if !w.racer || len(rep.Result) == 0 {
			f.c.Proc(p, "exit_code", "%s %s; only a racer ends in 3 (worker error), and with its result", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
		}
	default:
		f.c.Proc(p, "exit_code", "%s %s; a delivery ends in 0 (ACK) or 17 (crash)", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
}

// account checks an acknowledging worker's report against the rows
// before it and after it (its step's rows), through the pattern.
func (f *folder) account(pat subject.Subject, r ran, before subject.State) {
	if r.rep == nil || r.step.ExitCode != protocol.ExitACK || r.step.Signal != "" || pat.Account == nil {
		return
	}
	p, _ := f.rec.Process(r.id)
	for _, msg := range pat.Account(f.p.Params, r.step.Role, r.sender, r.rep.Result, before, r.step.Rows) {
		f.c.Proc(p, "stdout", "%s", msg)
	}
	if f.p.Params.Backend == "" {
		return
	}
	// Every worker on PostgreSQL reports what its session read back,
	// under the same key.
	var rb struct {
		Postgres *store.PGSettings `json:"postgres"`
	}
	if err := json.Unmarshal(r.rep.Result, &rb); err != nil {
		f.c.Proc(p, "stdout", "the result: %v", err)
		return
	}
	if msg := backend.CheckReadBack(f.cond(p.Condition).Spec.Requested(), rb.Postgres); msg != "" {
		f.c.Proc(p, "stdout", "%s", msg)
	}
}

// backend is the name of the backend the run's conditions ran on.
func (f *folder) backend() string {
	if f.p.Params.Backend == "" {
		return backend.SQLite.Name
	}
	return f.p.Params.Backend
}

// cond is the settings' condition named name.
func (f *folder) cond(name string) Condition {
	for _, c := range f.p.Conditions {
		if c.Name == name {
			return c
		}
	}
	return Condition{}
}

// process is the record of a checked process, for a finding about it.
func (f *folder) process(r ran) results.Process {
	p, _ := f.rec.Process(r.id)
	return p
}

// files are the trial's places as an observation records them.
func files(o subject.Observation) subject.Files { return subject.Files{DB: o.DB, Receiver: o.Receiver} }

// rows checks an observation's shape shared by every step.
func (f *folder) rows(pat subject.Subject, e entry, step string, processes int, db string) {
	if e.o.Step != step {
		f.c.Obs(e.l, "step", "is %q, want %q here", e.o.Step, step)
	}
	if len(e.o.ProcessIDs) != processes {
		f.c.Obs(e.l, "process_ids", "lists %d processes, the step runs %d", len(e.o.ProcessIDs), processes)
	}
	if !backend.IsTarget(f.backend(), e.o.DB, f.p.DBName) || (db != "" && e.o.DB != db) {
		f.c.Obs(e.l, "db", "%q, but a trial's steps use one %s (%q)", e.o.DB, backend.TargetKind(f.backend(), f.p.DBName), db)
	}
	if want := f.cond(e.o.Condition).Spec.Requested(); want != nil {
		if got := sessionParams(e.o.DB); !want.Matches(got) {
			f.c.Obs(e.l, "db", "opens sessions with %s, but condition %s runs under %s", results.Compact(got), e.o.Condition, results.Compact(*want))
		}
	}
	for _, msg := range pat.CheckRows(f.p.Params, e.o.Rows) {
		f.c.Obs(e.l, "rows", "%s", msg)
	}
	if (e.o.Receiver != "") != pat.Sends {
		f.c.Obs(e.l, "receiver", "%q, but pattern %s sends: %v", e.o.Receiver, pat.Name, pat.Sends)
	}
}

// sessionParams is what a recorded connection string asks of every
// session it opens; zero when it does not parse.
func sessionParams(dsn string) store.PGRequested {
	s, err := store.ParseSession(dsn)
	if err != nil {
		return store.PGRequested{}
	}
	return s.Requested()
}

// fresh says a trial's file is its own.
func (f *folder) fresh(e entry) {
	key := fmt.Sprintf("%s trial %d", e.o.Condition, e.o.Trial)
	if other, dup := f.dbs.Take(e.l.Shard, e.o.DB, key); dup && other != key {
		f.c.Obs(e.l, "db", "%s is also %s's file; every trial starts on a fresh file", e.o.DB, other)
	}
}

func (f *folder) discovery(cf condFold, es []entry) DiscoveryObserved {
	obs := DiscoveryObserved{Points: []string{}}
	if len(es) != 1 {
		f.c.Obs(es[0].l, "trial", "%s has %d steps, discovery runs one", cf.c.Name, len(es))
	}
	e := es[0]
	f.rows(cf.pat, e, subject.StepDelivery, 1, "")
	f.fresh(e)
	if e.o.Point != "" || e.o.K != 0 || e.o.KillDelaysUS != nil {
		f.c.Obs(e.l, "", "discovery is a normal delivery, but a point, k or kill is recorded")
	}
	if len(e.o.ProcessIDs) != 1 {
		return obs
	}
	tok := f.senders(cf.pat, e, 1)[0]
	r := f.proc(e, e.o.ProcessIDs[0], procWant{label: subject.Label(0, subject.StepDelivery), role: subject.RoleDelivery, worker: cf.pat.Worker, args: cf.pat.Args(f.p.Params, files(e.o).As(tok)), sender: tok})
	if !r.ok || r.rep == nil {
		return obs
	}
	p := f.process(r)
	if r.step.ExitCode != protocol.ExitACK {
		f.c.Proc(p, "exit_code", "%d, but discovery must finish normally", r.step.ExitCode)
	}
	f.account(cf.pat, r, subject.State{})
	obs.Points, obs.DurationMS = r.rep.Points, p.DurationMS
	return obs
}

// pair checks a trial of a delivery and its recovery, the recovery's
// processes replayed from the pattern over the recorded states, and
// returns its history and the delivery's report.
func (f *folder) pair(cf condFold, i int, es []entry, first procWant) (subject.History, *protocol.Report, bool) {
	pat := cf.pat
	h := subject.History{Items: f.p.Params.Items}
	d := es[0]
	f.rows(pat, d, subject.StepDelivery, 1, "")
	f.fresh(d)
	if len(d.o.ProcessIDs) != 1 {
		return h, nil, false
	}
	tok := f.senders(pat, d, 1)[0]
	first.label, first.role, first.worker, first.args, first.sender = subject.Label(i, subject.StepDelivery), subject.RoleDelivery, pat.Worker, pat.Args(f.p.Params, files(d.o).As(tok)), tok
	r1 := f.proc(d, d.o.ProcessIDs[0], first)
	f.account(pat, r1, subject.State{})
	h.Steps = append(h.Steps, r1.step)
	steps, ok := f.recovery(cf, i, d, es[1:])
	h.Steps = append(h.Steps, steps...)
	f.lateSends(cf, i, es)
	return h, r1.rep, r1.ok && ok && len(h.Steps) > 1
}

// recovery checks the recovery steps rest that follow the step d of trial
// i, each process replayed from the pattern over the recorded states, as
// the run chose them, and returns them as history steps.
func (f *folder) recovery(cf condFold, i int, d entry, rest []entry) ([]subject.Step, bool) {
	pat := cf.pat
	var steps []subject.Step
	ok := true
	var done []string
	prev := d.o.Rows
	n := 0
	for {
		// The recovery's processes follow the step d's in the trial.
		tok := ""
		if n < len(rest) {
			if ts := f.senders(pat, rest[n], len(d.o.ProcessIDs)+n+1); len(ts) > 0 {
				tok = ts[0]
			}
		}
		a, more := pat.NextAction(f.p.Params, files(d.o).As(tok), done, prev)
		if !more {
			break
		}
		if n >= len(rest) {
			last := d
			if n > 0 {
				last = rest[n-1]
			}
			f.c.Obs(last.l, "trial", "%s trial %d ends after %d steps, but the recovery goes on with %q", cf.c.Name, i, n+1, a.Step)
			return steps, false
		}
		r := rest[n]
		f.recoveryStep(cf, d, r, &a, prev)
		if len(r.o.ProcessIDs) != 1 {
			return steps, false
		}
		rr := f.proc(r, r.o.ProcessIDs[0], procWant{label: subject.Label(i, a.Step), role: a.Role, worker: a.Worker, args: a.Args, sender: tok})
		f.account(pat, rr, prev)
		ok = ok && rr.ok
		steps = append(steps, rr.step)
		done = append(done, a.Step)
		prev = r.o.Rows
		n++
	}
	if n < len(rest) {
		f.c.Obs(rest[n].l, "trial", "%s trial %d has %d steps, but its recovery ended after %d", cf.c.Name, i, len(rest)+1, n+1)
	}
	return steps, ok
}

// recoveryStep checks a recovery step's line r against the action the
// pattern takes after the delivery d, and fills the action's arguments
// from the lookup the parent made, as the run did.
func (f *folder) recoveryStep(cf condFold, d, r entry, a *subject.Action, prev subject.State) {
	f.rows(cf.pat, r, a.Step, 1, d.o.DB)
	if r.o.Receiver != d.o.Receiver {
		f.c.Obs(r.l, "receiver", "%q, but the trial's delivery used %q", r.o.Receiver, d.o.Receiver)
	}
	if r.o.Point != "" || r.o.K != 0 || r.o.KillDelaysUS != nil {
		f.c.Obs(r.l, "", "a recovery step is a normal run, but a point, k or kill is recorded")
	}
	if a.LookUp == "" {
		if r.o.Lookup != nil {
			f.c.Obs(r.l, "lookup", "recorded, but step %q asks the receiver nothing", a.Step)
		}
		return
	}
	want := cf.pat.Looked(prev, a.LookUp)
	if r.o.Lookup == nil || *r.o.Lookup != want {
		f.c.Obs(r.l, "lookup", "%s, but the receiver's log before it gives %s", results.Compact(r.o.Lookup), results.Compact(want))
		if r.o.Lookup != nil {
			want = *r.o.Lookup
		}
	}
	a.Args = a.With(want)
}

// violations records each invariant of invs that the trial's history h
// breaks, with its replay, and returns the names it broke, each once.
func (f *folder) violations(cf condFold, h subject.History, v ViolationRecord, invs []subject.Invariant) []string {
	c := cf.c
	v.Condition, v.Pattern, v.Kind, v.Seed = c.Name, c.Subject, c.Label, f.p.Seed
	v.Replay = f.p.Replay(c, v.Trial)
	broken := []string{}
	for _, x := range subject.Check(h, invs) {
		v.Invariant, v.Detail = x.Invariant, x.Detail
		if engine.Scheduled(c.Class) {
			f.extra.TimingViolations = append(f.extra.TimingViolations, v)
		} else {
			f.extra.Violations = append(f.extra.Violations, v)
		}
		if !slices.Contains(broken, x.Invariant) {
			broken = append(broken, x.Invariant)
		}
	}
	return broken
}

func (f *folder) sweep(cf condFold) SweepObserved {
	points := cf.points
	obs := SweepObserved{Points: append([]string{}, points...), Outcomes: []PointOutcome{}, ViolatingPoints: []string{}}
	for i, pt := range points {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		if es[0].o.Point != pt || es[0].o.K != 0 || es[0].o.KillDelaysUS != nil {
			f.c.Obs(es[0].l, "point", "%q (k %d), but sweep trial %d crashes at discovered point %q", es[0].o.Point, es[0].o.K, i, pt)
		}
		h, rep, ok := f.pair(cf, i, es, procWant{env: map[string]string{protocol.EnvCrashAt: pt}, crashAt: pt})
		if !ok {
			continue
		}
		if rep != nil && !slices.Equal(rep.Points, points[:i+1]) {
			p, _ := f.rec.Process(es[0].o.ProcessIDs[0])
			f.c.Proc(p, "stdout", "passed %v before crashing, but discovery passed %v first", rep.Points, points[:i+1])
		}
		po := PointOutcome{Point: pt, Outcome: cf.pat.Classify(f.p.Params, h.Steps[len(h.Steps)-1].Rows)}
		po.Violations = f.violations(cf, h, ViolationRecord{Trial: i, Point: pt}, cf.pat.Invariants)
		if len(po.Violations) > 0 {
			obs.ViolatingPoints = append(obs.ViolatingPoints, pt)
		}
		obs.Outcomes = append(obs.Outcomes, po)
	}
	return obs
}

func (f *folder) hits(cf condFold) HitsObserved {
	c, points := cf.c, cf.points
	obs := HitsObserved{Histogram: map[string]int{}, PerTrial: []HitTrial{}}
	for _, i := range c.Indices {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		k := seed.CrashK(f.p.Seed, c.Name, i, len(points))
		if es[0].o.K != k || es[0].o.Point != "" || es[0].o.KillDelaysUS != nil {
			f.c.Obs(es[0].l, "k", "%d, but seed %d gives trial %d of %s k=%d over %d points", es[0].o.K, f.p.Seed, i, c.Name, k, len(points))
		}
		h, rep, ok := f.pair(cf, i, es, procWant{env: map[string]string{protocol.EnvCrashAfterHits: strconv.Itoa(k)}, k: k})
		if !ok {
			continue
		}
		if rep != nil && k <= len(points) && !slices.Equal(rep.Points, points[:k]) {
			p, _ := f.rec.Process(es[0].o.ProcessIDs[0])
			f.c.Proc(p, "stdout", "passed %v before crashing, but discovery passed %v first", rep.Points, points[:k])
		}
		t := HitTrial{Trial: i, K: k, CrashedAt: h.Steps[0].CrashedAt, Outcome: cf.pat.Classify(f.p.Params, h.Steps[len(h.Steps)-1].Rows)}
		obs.Trials++
		obs.Histogram[t.Outcome]++
		if len(f.violations(cf, h, ViolationRecord{Trial: i, K: k, Point: t.CrashedAt}, cf.pat.Invariants)) > 0 {
			obs.ViolatingTrials++
		}
		obs.PerTrial = append(obs.PerTrial, t)
	}
	return obs
}

func (f *folder) kills(cf condFold) TimingObserved {
	c, points := cf.c, cf.points
	obs := TimingObserved{Timing: TimingFigures{Histogram: map[string]int{}, PerTrial: []TimingTrial{}}}
	for _, i := range c.Indices {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		window := f.window(c.Subject, es[0].l)
		d := seed.KillDelayUS(f.p.Seed, c.Name, i, window)
		if !slices.Equal(es[0].o.KillDelaysUS, []int64{d}) || es[0].o.Point != "" || es[0].o.K != 0 {
			f.c.Obs(es[0].l, "kill_delays_us", "%v, but seed %d gives trial %d of %s a delay of %d µs over the measured %d µs", es[0].o.KillDelaysUS, f.p.Seed, i, c.Name, d, window)
		}
		h, rep, ok := f.pair(cf, i, es, procWant{kill: true})
		if !ok {
			continue
		}
		landed := 0
		if h.Steps[0].Signal != "" {
			landed = 1
		} else if rep != nil && !slices.Equal(rep.Points, points) {
			p, _ := f.rec.Process(es[0].o.ProcessIDs[0])
			f.c.Proc(p, "stdout", "finished having passed %v, but discovery passed %v", rep.Points, points)
		}
		t := TimingTrial{Trial: i, KillDelaysUS: []int64{d}, Landed: landed, Outcome: cf.pat.Classify(f.p.Params, h.Steps[len(h.Steps)-1].Rows)}
		obs.Trials++
		obs.Timing.Kills++
		obs.Timing.Landed += landed
		obs.Timing.Histogram[t.Outcome]++
		if len(f.violations(cf, h, ViolationRecord{Trial: i, KillDelaysUS: t.KillDelaysUS}, cf.pat.Invariants)) > 0 {
			obs.Timing.ViolatingTrials++
		}
		obs.Timing.PerTrial = append(obs.Timing.PerTrial, t)
	}
	return obs
}
