package explore

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/seed"
	"idemlab/worker/protocol"
)

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
	PerTrial   []TimingTrial  `json:"per_trial"`
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

// Extra is the scenario's derived extra table.
type Extra struct {
	Seed       uint64              `json:"seed"`
	Discovered map[string][]string `json:"discovered_points"`
	// KillWindowUS is each pattern's kill delay range, from discovery.
	KillWindowUS map[string]int64 `json:"kill_window_us" idemlab:"measure"`
	// Violations are the replayable ones (sweep, crash-after-hits);
	// TimingViolations come from kills and races.
	Violations       []ViolationRecord `json:"violations"`
	TimingViolations []ViolationRecord `json:"timing_violations" idemlab:"measure"`
}

// entry is one line of observations.jsonl, decoded: the one value the
// fold's checks of a step take.
type entry struct {
	l results.Line
	o Observation
}

// condFold is one condition as the fold sees it: its pattern, the points
// the pattern's discovery passed, and its recorded steps by trial.
type condFold struct {
	pat    Pattern
	c      Condition
	points []string
	trials map[int][]entry
}

// folder carries one fold's state.
type folder struct {
	c     results.Checker
	st    Settings
	rec   results.Records
	dbs   map[string]string
	extra Extra
}

// Fold derives every condition from the records alone: the points each
// discovery passed, each trial's k and delays recomputed from the seed and
// checked against what was recorded, each process's argv, environment,
// exit and report, the rows against the settings and the workers' claims,
// and the invariants over each trial's history.
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{st: st, rec: rec, dbs: map[string]string{}, extra: Extra{
		Seed: st.Seed, Discovered: map[string][]string{}, KillWindowUS: map[string]int64{},
		Violations: []ViolationRecord{}, TimingViolations: []ViolationRecord{},
	}}
	folded := scenario.Folded{Observed: map[string]any{}}
	trials := f.group()
	pats := f.patterns()
	points := map[string][]string{}
	for _, c := range st.Conditions {
		pat, ok := pats[c.Pattern]
		if !ok {
			f.c.Add(results.ResultsFile, "scenarios[explore].settings.conditions", "condition %s names pattern %q, not in the settings' patterns", c.Name, c.Pattern)
			continue
		}
		cf := condFold{pat: pat, c: c, points: points[c.Pattern], trials: trials[c.Name]}
		f.checkTrials(cf)
		switch c.Kind {
		case KindDiscovery:
			if es := cf.trials[0]; len(es) > 0 {
				obs := f.discovery(cf, es)
				points[c.Pattern] = obs.Points
				f.extra.Discovered[c.Pattern] = obs.Points
				f.extra.KillWindowUS[c.Pattern] = KillWindowUS(obs.DurationMS)
				folded.Observed[c.Name] = obs
			}
		case KindSweep:
			folded.Observed[c.Name] = f.sweep(cf)
		case KindHits:
			folded.Observed[c.Name] = f.hits(cf)
		case KindKill:
			folded.Observed[c.Name] = f.kills(cf)
		case KindRace:
			folded.Observed[c.Name] = f.races(cf)
		case KindTakeover:
			folded.Observed[c.Name] = f.takeover(cf)
		}
	}
	f.c.Unused(rec, 1)
	folded.Extra = f.extra
	return folded, f.c.Findings
}

// group decodes the observations and groups them by condition and trial,
// in the order recorded.
func (f *folder) group() map[string]map[int][]entry {
	conds := f.st.conditionsByName()
	trials := map[string]map[int][]entry{}
	for _, l := range f.rec.Observations {
		var o Observation
		if err := results.DecodeStrict(l.Raw, &o); err != nil {
			f.c.Obs(l, "", "not an explore observation: %v", err)
			continue
		}
		if _, ok := conds[o.Condition]; !ok {
			f.c.Obs(l, "condition", "%q is not a condition in the settings", o.Condition)
			continue
		}
		if trials[o.Condition] == nil {
			trials[o.Condition] = map[int][]entry{}
		}
		trials[o.Condition][o.Trial] = append(trials[o.Condition][o.Trial], entry{l, o})
	}
	return trials
}

// patterns looks up the settings' patterns in the registry, checking that
// the settings describe them as registered.
func (f *folder) patterns() map[string]Pattern {
	pats := map[string]Pattern{}
	for i, ps := range f.st.Patterns {
		pat, ok := LookupPattern(ps.Name)
		if !ok {
			f.c.Add(results.ResultsFile, fmt.Sprintf("scenarios[explore].settings.patterns[%d]", i), "pattern %q is not registered", ps.Name)
			continue
		}
		if ps != settingOf(pat) {
			f.c.Add(results.ResultsFile, fmt.Sprintf("scenarios[explore].settings.patterns[%d]", i), "is %s, the registered pattern has other workers or window", results.Compact(ps))
		}
		pats[ps.Name] = pat
	}
	return pats
}

// checkTrials checks that the condition's recorded trials are exactly the
// ones the settings (and, for a sweep or takeover, the points) run.
func (f *folder) checkTrials(cf condFold) {
	var want []int
	switch cf.c.Kind {
	case KindDiscovery:
		want = []int{0}
	case KindSweep, KindTakeover:
		for i := range cf.points {
			want = append(want, i)
		}
	default:
		want = cf.c.Trials
	}
	for _, i := range sortedInts(cf.trials) {
		if !slices.Contains(want, i) {
			f.c.Obs(cf.trials[i][0].l, "trial", "%d is not a trial of condition %s", i, cf.c.Name)
		}
	}
	var missing []int
	for _, i := range want {
		if _, ok := cf.trials[i]; !ok {
			missing = append(missing, i)
		}
	}
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
}

// ran is one process as the fold checked it: its history step and, when
// it reported, its report.
type ran struct {
	id   int
	step Step
	rep  *protocol.Report
	ok   bool
}

// proc checks one process of entry e against what the observation implies
// and returns it as a history step, with its report when it made one.
func (f *folder) proc(e entry, id int, w procWant) ran {
	r := ran{id: id, step: Step{Role: w.role, Rows: e.o.Rows}}
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
func (f *folder) account(pat Pattern, r ran, before State) {
	if r.rep == nil || r.step.ExitCode != protocol.ExitACK || r.step.Signal != "" || pat.Account == nil {
		return
	}
	p, _ := f.rec.Process(r.id)
	for _, msg := range pat.Account(f.st, r.step.Role, r.rep.Result, before, r.step.Rows) {
		f.c.Proc(p, "stdout", "%s", msg)
	}
}

// process is the record of a checked process, for a finding about it.
func (f *folder) process(r ran) results.Process {
	p, _ := f.rec.Process(r.id)
	return p
}

// files are the trial's places as an observation records them.
func files(o Observation) Files { return Files{DB: o.DB, Receiver: o.Receiver} }

// rows checks an observation's shape shared by every step.
func (f *folder) rows(pat Pattern, e entry, step string, processes int, db string) {
	if e.o.Step != step {
		f.c.Obs(e.l, "step", "is %q, want %q here", e.o.Step, step)
	}
	if len(e.o.ProcessIDs) != processes {
		f.c.Obs(e.l, "process_ids", "lists %d processes, the step runs %d", len(e.o.ProcessIDs), processes)
	}
	if filepath.Base(e.o.DB) != DBName || (db != "" && e.o.DB != db) {
		f.c.Obs(e.l, "db", "%q, but a trial's steps use one file named %s (%q)", e.o.DB, DBName, db)
	}
	for _, msg := range pat.CheckRows(f.st, e.o.Rows) {
		f.c.Obs(e.l, "rows", "%s", msg)
	}
	if (e.o.Receiver != "") != pat.Sends {
		f.c.Obs(e.l, "receiver", "%q, but pattern %s sends: %v", e.o.Receiver, pat.Name, pat.Sends)
	}
}

// fresh says a trial's file is its own.
func (f *folder) fresh(e entry) {
	key := fmt.Sprintf("%s trial %d", e.o.Condition, e.o.Trial)
	if other, dup := f.dbs[e.o.DB]; dup && other != key {
		f.c.Obs(e.l, "db", "%s is also %s's file; every trial starts on a fresh file", e.o.DB, other)
	}
	f.dbs[e.o.DB] = key
}

func label(i int, step string) string { return fmt.Sprintf("trial %06d %s", i, step) }

func (f *folder) discovery(cf condFold, es []entry) DiscoveryObserved {
	obs := DiscoveryObserved{Points: []string{}}
	if len(es) != 1 {
		f.c.Obs(es[0].l, "trial", "%s has %d steps, discovery runs one", cf.c.Name, len(es))
	}
	e := es[0]
	f.rows(cf.pat, e, StepDelivery, 1, "")
	f.fresh(e)
	if e.o.Point != "" || e.o.K != 0 || e.o.KillDelaysUS != nil {
		f.c.Obs(e.l, "", "discovery is a normal delivery, but a point, k or kill is recorded")
	}
	if len(e.o.ProcessIDs) != 1 {
		return obs
	}
	r := f.proc(e, e.o.ProcessIDs[0], procWant{label: label(0, StepDelivery), role: RoleDelivery, worker: cf.pat.Worker, args: cf.pat.Args(f.st, files(e.o))})
	if !r.ok || r.rep == nil {
		return obs
	}
	p := f.process(r)
	if r.step.ExitCode != protocol.ExitACK {
		f.c.Proc(p, "exit_code", "%d, but discovery must finish normally", r.step.ExitCode)
	}
	f.account(cf.pat, r, State{})
	obs.Points, obs.DurationMS = r.rep.Points, p.DurationMS
	return obs
}

// pair checks a trial of a delivery and its recovery, the recovery's
// processes replayed from the pattern over the recorded states, and
// returns its history and the delivery's report.
func (f *folder) pair(cf condFold, i int, es []entry, first procWant) (History, *protocol.Report, bool) {
	pat := cf.pat
	h := History{Items: f.st.Items}
	d := es[0]
	f.rows(pat, d, StepDelivery, 1, "")
	f.fresh(d)
	if len(d.o.ProcessIDs) != 1 {
		return h, nil, false
	}
	fl := files(d.o)
	first.label, first.role, first.worker, first.args = label(i, StepDelivery), RoleDelivery, pat.Worker, pat.Args(f.st, fl)
	r1 := f.proc(d, d.o.ProcessIDs[0], first)
	f.account(pat, r1, State{})
	h.Steps = append(h.Steps, r1.step)
	ok := r1.ok
	var done []string
	prev := d.o.Rows
	n := 1
	for {
		a, more := pat.nextAction(f.st, fl, done, prev)
		if !more {
			break
		}
		if n >= len(es) {
			f.c.Obs(es[len(es)-1].l, "trial", "%s trial %d ends after %d steps, but the recovery goes on with %q", cf.c.Name, i, len(es), a.Step)
			return h, r1.rep, false
		}
		r := es[n]
		f.recoveryStep(cf, d, r, &a, prev)
		if len(r.o.ProcessIDs) != 1 {
			return h, r1.rep, false
		}
		rr := f.proc(r, r.o.ProcessIDs[0], procWant{label: label(i, a.Step), role: a.Role, worker: a.Worker, args: a.Args})
		f.account(pat, rr, prev)
		ok = ok && rr.ok
		h.Steps = append(h.Steps, rr.step)
		done = append(done, a.Step)
		prev = r.o.Rows
		n++
	}
	if n < len(es) {
		f.c.Obs(es[n].l, "trial", "%s trial %d has %d steps, but its recovery ended after %d", cf.c.Name, i, len(es), n)
	}
	return h, r1.rep, ok && len(h.Steps) > 1
}

// recoveryStep checks a recovery step's line r against the action the
// pattern takes after the delivery d, and fills the action's arguments
// from the lookup the parent made, as the run did.
func (f *folder) recoveryStep(cf condFold, d, r entry, a *Action, prev State) {
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

// violations records each broken invariant of a trial with its replay.
func (f *folder) violations(cf condFold, h History, v ViolationRecord) []Violation {
	vs := Check(h, cf.pat.Invariants)
	c := cf.c
	v.Condition, v.Pattern, v.Kind, v.Seed = c.Name, c.Pattern, c.Kind, f.st.Seed
	v.Replay = replay(f.st, c, v.Trial)
	for _, x := range vs {
		v.Invariant, v.Detail = x.Invariant, x.Detail
		if c.Timing() {
			f.extra.TimingViolations = append(f.extra.TimingViolations, v)
		} else {
			f.extra.Violations = append(f.extra.Violations, v)
		}
	}
	return vs
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
		po := PointOutcome{Point: pt, Outcome: cf.pat.Classify(f.st, h.Steps[len(h.Steps)-1].Rows), Violations: []string{}}
		for _, v := range f.violations(cf, h, ViolationRecord{Trial: i, Point: pt}) {
			if !slices.Contains(po.Violations, v.Invariant) {
				po.Violations = append(po.Violations, v.Invariant)
			}
		}
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
	for _, i := range c.Trials {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		k := seed.CrashK(f.st.Seed, c.Name, i, len(points))
		if es[0].o.K != k || es[0].o.Point != "" || es[0].o.KillDelaysUS != nil {
			f.c.Obs(es[0].l, "k", "%d, but seed %d gives trial %d of %s k=%d over %d points", es[0].o.K, f.st.Seed, i, c.Name, k, len(points))
		}
		h, rep, ok := f.pair(cf, i, es, procWant{env: map[string]string{protocol.EnvCrashAfterHits: strconv.Itoa(k)}, k: k})
		if !ok {
			continue
		}
		if rep != nil && k <= len(points) && !slices.Equal(rep.Points, points[:k]) {
			p, _ := f.rec.Process(es[0].o.ProcessIDs[0])
			f.c.Proc(p, "stdout", "passed %v before crashing, but discovery passed %v first", rep.Points, points[:k])
		}
		t := HitTrial{Trial: i, K: k, CrashedAt: h.Steps[0].CrashedAt, Outcome: cf.pat.Classify(f.st, h.Steps[len(h.Steps)-1].Rows)}
		obs.Trials++
		obs.Histogram[t.Outcome]++
		if len(f.violations(cf, h, ViolationRecord{Trial: i, K: k, Point: t.CrashedAt})) > 0 {
			obs.ViolatingTrials++
		}
		obs.PerTrial = append(obs.PerTrial, t)
	}
	return obs
}

func (f *folder) kills(cf condFold) TimingObserved {
	c, points := cf.c, cf.points
	obs := TimingObserved{Timing: TimingFigures{Histogram: map[string]int{}, PerTrial: []TimingTrial{}}}
	window := f.extra.KillWindowUS[c.Pattern]
	for _, i := range c.Trials {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		d := seed.KillDelayUS(f.st.Seed, c.Name, i, window)
		if !slices.Equal(es[0].o.KillDelaysUS, []int64{d}) || es[0].o.Point != "" || es[0].o.K != 0 {
			f.c.Obs(es[0].l, "kill_delays_us", "%v, but seed %d gives trial %d of %s a delay of %d µs over the measured %d µs", es[0].o.KillDelaysUS, f.st.Seed, i, c.Name, d, window)
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
		t := TimingTrial{Trial: i, KillDelaysUS: []int64{d}, Landed: landed, Outcome: cf.pat.Classify(f.st, h.Steps[len(h.Steps)-1].Rows)}
		obs.Trials++
		obs.Timing.Kills++
		obs.Timing.Landed += landed
		obs.Timing.Histogram[t.Outcome]++
		if len(f.violations(cf, h, ViolationRecord{Trial: i, KillDelaysUS: t.KillDelaysUS})) > 0 {
			obs.Timing.ViolatingTrials++
		}
		obs.Timing.PerTrial = append(obs.Timing.PerTrial, t)
	}
	return obs
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
