package explore

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
)

// DiscoveryObserved is what a pattern's discovery delivery passed.
type DiscoveryObserved struct {
	Points     []string `json:"points"`
	DurationMS float64  `json:"duration_ms"`
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
	Timing TimingFigures `json:"timing"`
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
	KillWindowUS map[string]int64 `json:"kill_window_us"`
	// Violations are the replayable ones (sweep, crash-after-hits);
	// TimingViolations come from kills and races.
	Violations       []ViolationRecord `json:"violations"`
	TimingViolations []ViolationRecord `json:"timing_violations"`
}

type entry struct {
	l results.Line
	o Observation
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
func (s Scenario) Fold(raw json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{rec: rec, dbs: map[string]string{}}
	folded := scenario.Folded{Observed: map[string]any{}}
	if err := scenario.DecodeStrict(raw, &f.st); err != nil {
		f.c.Add(results.ResultsFile, "scenarios[explore].settings", "not explore settings: %v", err)
		return folded, f.c.Findings
	}
	st := f.st
	f.extra = Extra{Seed: st.Seed, Discovered: map[string][]string{}, KillWindowUS: map[string]int64{}, Violations: []ViolationRecord{}, TimingViolations: []ViolationRecord{}}
	conds := st.conditionsByName()
	trials := map[string]map[int][]entry{}
	for _, l := range rec.Observations {
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
	pats := map[string]Pattern{}
	for i, ps := range st.Patterns {
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
	points := map[string][]string{}
	for _, c := range st.Conditions {
		pat, ok := pats[c.Pattern]
		if !ok {
			f.c.Add(results.ResultsFile, "scenarios[explore].settings.conditions", "condition %s names pattern %q, not in the settings' patterns", c.Name, c.Pattern)
			continue
		}
		got := trials[c.Name]
		var want []int
		switch c.Kind {
		case KindDiscovery:
			want = []int{0}
		case KindSweep, KindTakeover:
			for i := range points[c.Pattern] {
				want = append(want, i)
			}
		default:
			want = c.Trials
		}
		for _, i := range sortedInts(got) {
			if !slices.Contains(want, i) {
				f.c.Obs(got[i][0].l, "trial", "%d is not a trial of condition %s", i, c.Name)
			}
		}
		var missing []int
		for _, i := range want {
			if _, ok := got[i]; !ok {
				missing = append(missing, i)
			}
		}
		if len(missing) > 0 {
			f.c.AddTo(c.Name, results.ObservationsFile, "condition "+c.Name, "trials %v are not recorded; the settings run %d", missing, len(want))
		}
		switch c.Kind {
		case KindDiscovery:
			if es := got[0]; len(es) > 0 {
				obs := f.discovery(pat, c, es)
				points[c.Pattern] = obs.Points
				f.extra.Discovered[c.Pattern] = obs.Points
				f.extra.KillWindowUS[c.Pattern] = KillWindowUS(obs.DurationMS)
				folded.Observed[c.Name] = obs
			}
		case KindSweep:
			folded.Observed[c.Name] = f.sweep(pat, c, points[c.Pattern], got)
		case KindHits:
			folded.Observed[c.Name] = f.hits(pat, c, points[c.Pattern], got)
		case KindKill:
			folded.Observed[c.Name] = f.kills(pat, c, points[c.Pattern], got)
		case KindRace:
			folded.Observed[c.Name] = f.races(pat, c, got)
		case KindTakeover:
			folded.Observed[c.Name] = f.takeover(pat, c, points[c.Pattern], got)
		}
	}
	f.c.Unused(rec, 1)
	folded.Extra = f.extra
	return folded, f.c.Findings
}

// procWant is what the run chose for one process.
type procWant struct {
	label   string
	worker  string
	args    []string
	env     map[string]string
	crashAt string
	k       int
	kill    bool
	racer   bool
}

// proc checks one process against what its observation implies and
// returns its step and, when it reported, its report.
func (f *folder) proc(l results.Line, id int, w procWant, role string, rows State) (Step, *protocol.Report, bool) {
	step := Step{Role: role, Rows: rows}
	p, ok := f.c.Use(f.rec, l, id)
	if !ok {
		return step, nil, false
	}
	if p.Label != w.label {
		f.c.Proc(p, "label", "is %q, the observation's trial and step give %q", p.Label, w.label)
	}
	f.c.Argv(p, w.worker, w.args)
	f.c.Env(p, w.env)
	step.ExitCode, step.Signal = p.ExitCode, p.Signal
	if p.KilledBy != "" && (p.KilledBy != "harness" || !w.kill) {
		f.c.Proc(p, "killed_by", "is %q, but the run scheduled no kill of this process", p.KilledBy)
	}
	if p.Signal != "" {
		if !w.kill || p.KilledBy != "harness" || p.Signal != "killed" {
			f.c.Proc(p, "signal", "%q (killed_by %q): only the harness's scheduled SIGKILL may end a worker by a signal", p.Signal, p.KilledBy)
		}
		return step, nil, true
	}
	rep, err := protocol.ParseReport(p.Stdout)
	if err != nil {
		f.c.Proc(p, "stdout", "%s: %v", p.Label, err)
		return step, nil, false
	}
	if rep.Worker != p.Worker {
		f.c.Proc(p, "stdout", "the report names worker %q, the record says %q", rep.Worker, p.Worker)
	}
	step.CrashedAt = rep.CrashedAt
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
	return step, &rep, true
}

// account checks an acknowledging worker's report against the rows
// before and after it, through the pattern.
func (f *folder) account(pat Pattern, id int, role string, rep *protocol.Report, step Step, before, after State) {
	if rep == nil || step.ExitCode != protocol.ExitACK || step.Signal != "" || pat.Account == nil {
		return
	}
	p, _ := f.rec.Process(id)
	for _, msg := range pat.Account(f.st, role, rep.Result, before, after) {
		f.c.Proc(p, "stdout", "%s", msg)
	}
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

func (f *folder) discovery(pat Pattern, c Condition, es []entry) DiscoveryObserved {
	obs := DiscoveryObserved{Points: []string{}}
	if len(es) != 1 {
		f.c.Obs(es[0].l, "trial", "%s has %d steps, discovery runs one", c.Name, len(es))
	}
	e := es[0]
	f.rows(pat, e, StepDelivery, 1, "")
	f.fresh(e)
	if e.o.Point != "" || e.o.K != 0 || e.o.KillDelaysUS != nil {
		f.c.Obs(e.l, "", "discovery is a normal delivery, but a point, k or kill is recorded")
	}
	if len(e.o.ProcessIDs) != 1 {
		return obs
	}
	step, rep, ok := f.proc(e.l, e.o.ProcessIDs[0], procWant{label: label(0, StepDelivery), worker: pat.Worker, args: pat.Args(f.st, files(e.o))}, RoleDelivery, e.o.Rows)
	if !ok || rep == nil {
		return obs
	}
	p, _ := f.rec.Process(e.o.ProcessIDs[0])
	if step.ExitCode != protocol.ExitACK {
		f.c.Proc(p, "exit_code", "%d, but discovery must finish normally", step.ExitCode)
	}
	f.account(pat, e.o.ProcessIDs[0], RoleDelivery, rep, step, State{}, e.o.Rows)
	obs.Points, obs.DurationMS = rep.Points, p.DurationMS
	return obs
}

// pair checks a trial of a delivery and its recovery, the recovery's
// processes replayed from the pattern over the recorded states, and
// returns its history.
func (f *folder) pair(pat Pattern, c Condition, i int, es []entry, first procWant) (History, *protocol.Report, bool) {
	h := History{Items: f.st.Items}
	d := es[0]
	f.rows(pat, d, StepDelivery, 1, "")
	f.fresh(d)
	if len(d.o.ProcessIDs) != 1 {
		return h, nil, false
	}
	fl := files(d.o)
	first.label, first.worker, first.args = label(i, StepDelivery), pat.Worker, pat.Args(f.st, fl)
	s1, rep1, ok := f.proc(d.l, d.o.ProcessIDs[0], first, RoleDelivery, d.o.Rows)
	f.account(pat, d.o.ProcessIDs[0], RoleDelivery, rep1, s1, State{}, d.o.Rows)
	h.Steps = append(h.Steps, s1)
	var done []string
	prev := d.o.Rows
	n := 1
	for {
		a, more := pat.nextAction(f.st, fl, done, prev)
		if !more {
			break
		}
		if n >= len(es) {
			f.c.Obs(es[len(es)-1].l, "trial", "%s trial %d ends after %d steps, but the recovery goes on with %q", c.Name, i, len(es), a.Step)
			return h, rep1, false
		}
		r := es[n]
		f.rows(pat, r, a.Step, 1, d.o.DB)
		if r.o.Receiver != d.o.Receiver {
			f.c.Obs(r.l, "receiver", "%q, but the trial's delivery used %q", r.o.Receiver, d.o.Receiver)
		}
		if r.o.Point != "" || r.o.K != 0 || r.o.KillDelaysUS != nil {
			f.c.Obs(r.l, "", "a recovery step is a normal run, but a point, k or kill is recorded")
		}
		if a.LookUp != "" {
			want := pat.Looked(prev, a.LookUp)
			if r.o.Lookup == nil || *r.o.Lookup != want {
				f.c.Obs(r.l, "lookup", "%s, but the receiver's log before it gives %s", results.Compact(r.o.Lookup), results.Compact(want))
				if r.o.Lookup != nil {
					want = *r.o.Lookup
				}
			}
			a.Args = a.With(want)
		} else if r.o.Lookup != nil {
			f.c.Obs(r.l, "lookup", "recorded, but step %q asks the receiver nothing", a.Step)
		}
		if len(r.o.ProcessIDs) != 1 {
			return h, rep1, false
		}
		s, rep, okr := f.proc(r.l, r.o.ProcessIDs[0], procWant{label: label(i, a.Step), worker: a.Worker, args: a.Args}, a.Role, r.o.Rows)
		f.account(pat, r.o.ProcessIDs[0], a.Role, rep, s, prev, r.o.Rows)
		ok = ok && okr
		h.Steps = append(h.Steps, s)
		done = append(done, a.Step)
		prev = r.o.Rows
		n++
	}
	if n < len(es) {
		f.c.Obs(es[n].l, "trial", "%s trial %d has %d steps, but its recovery ended after %d", c.Name, i, len(es), n)
	}
	return h, rep1, ok && len(h.Steps) > 1
}

// violations records each broken invariant of a trial with its replay.
func (f *folder) violations(pat Pattern, c Condition, h History, v ViolationRecord) []Violation {
	vs := Check(h, pat.Invariants)
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

// replay is the command that runs a trial again: the sweep always runs,
// and a random trial runs alone with --only-trial. Kills and races rerun
// with the same delays but not the same scheduling.
func replay(st Settings, c Condition, i int) string {
	base := fmt.Sprintf("idemlab experiment --scenario explore --seed %d", st.Seed)
	switch c.Kind {
	case KindSweep, KindTakeover:
		return base + " --trials 0 --rounds 0"
	case KindRace:
		return base + fmt.Sprintf(" --only-trial %d --trials 0 --rounds 1", i)
	}
	return base + fmt.Sprintf(" --only-trial %d --trials 2 --rounds 0", i)
}

func (f *folder) sweep(pat Pattern, c Condition, points []string, got map[int][]entry) SweepObserved {
	obs := SweepObserved{Points: append([]string{}, points...), Outcomes: []PointOutcome{}, ViolatingPoints: []string{}}
	for i, pt := range points {
		es, ok := got[i]
		if !ok {
			continue
		}
		if es[0].o.Point != pt || es[0].o.K != 0 || es[0].o.KillDelaysUS != nil {
			f.c.Obs(es[0].l, "point", "%q (k %d), but sweep trial %d crashes at discovered point %q", es[0].o.Point, es[0].o.K, i, pt)
		}
		h, rep, ok := f.pair(pat, c, i, es, procWant{env: map[string]string{protocol.EnvCrashAt: pt}, crashAt: pt})
		if !ok {
			continue
		}
		if rep != nil && !slices.Equal(rep.Points, points[:i+1]) {
			p, _ := f.rec.Process(es[0].o.ProcessIDs[0])
			f.c.Proc(p, "stdout", "passed %v before crashing, but discovery passed %v first", rep.Points, points[:i+1])
		}
		po := PointOutcome{Point: pt, Outcome: pat.Classify(f.st, h.Steps[len(h.Steps)-1].Rows), Violations: []string{}}
		for _, v := range f.violations(pat, c, h, ViolationRecord{Trial: i, Point: pt}) {
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

func (f *folder) hits(pat Pattern, c Condition, points []string, got map[int][]entry) HitsObserved {
	obs := HitsObserved{Histogram: map[string]int{}, PerTrial: []HitTrial{}}
	for _, i := range c.Trials {
		es, ok := got[i]
		if !ok {
			continue
		}
		k := CrashK(f.st.Seed, c.Name, i, len(points))
		if es[0].o.K != k || es[0].o.Point != "" || es[0].o.KillDelaysUS != nil {
			f.c.Obs(es[0].l, "k", "%d, but seed %d gives trial %d of %s k=%d over %d points", es[0].o.K, f.st.Seed, i, c.Name, k, len(points))
		}
		h, rep, ok := f.pair(pat, c, i, es, procWant{env: map[string]string{protocol.EnvCrashAfterHits: strconv.Itoa(k)}, k: k})
		if !ok {
			continue
		}
		if rep != nil && k <= len(points) && !slices.Equal(rep.Points, points[:k]) {
			p, _ := f.rec.Process(es[0].o.ProcessIDs[0])
			f.c.Proc(p, "stdout", "passed %v before crashing, but discovery passed %v first", rep.Points, points[:k])
		}
		t := HitTrial{Trial: i, K: k, CrashedAt: h.Steps[0].CrashedAt, Outcome: pat.Classify(f.st, h.Steps[len(h.Steps)-1].Rows)}
		obs.Trials++
		obs.Histogram[t.Outcome]++
		if len(f.violations(pat, c, h, ViolationRecord{Trial: i, K: k, Point: t.CrashedAt})) > 0 {
			obs.ViolatingTrials++
		}
		obs.PerTrial = append(obs.PerTrial, t)
	}
	return obs
}

func (f *folder) kills(pat Pattern, c Condition, points []string, got map[int][]entry) TimingObserved {
	obs := TimingObserved{Timing: TimingFigures{Histogram: map[string]int{}, PerTrial: []TimingTrial{}}}
	window := f.extra.KillWindowUS[c.Pattern]
	for _, i := range c.Trials {
		es, ok := got[i]
		if !ok {
			continue
		}
		d := KillDelayUS(f.st.Seed, c.Name, i, window)
		if !slices.Equal(es[0].o.KillDelaysUS, []int64{d}) || es[0].o.Point != "" || es[0].o.K != 0 {
			f.c.Obs(es[0].l, "kill_delays_us", "%v, but seed %d gives trial %d of %s a delay of %d µs over the measured %d µs", es[0].o.KillDelaysUS, f.st.Seed, i, c.Name, d, window)
		}
		h, rep, ok := f.pair(pat, c, i, es, procWant{kill: true})
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
		t := TimingTrial{Trial: i, KillDelaysUS: []int64{d}, Landed: landed, Outcome: pat.Classify(f.st, h.Steps[len(h.Steps)-1].Rows)}
		obs.Trials++
		obs.Timing.Kills++
		obs.Timing.Landed += landed
		obs.Timing.Histogram[t.Outcome]++
		if len(f.violations(pat, c, h, ViolationRecord{Trial: i, KillDelaysUS: t.KillDelaysUS})) > 0 {
			obs.Timing.ViolatingTrials++
		}
		obs.Timing.PerTrial = append(obs.Timing.PerTrial, t)
	}
	return obs
}

func (f *folder) races(pat Pattern, c Condition, got map[int][]entry) TimingObserved {
	obs := TimingObserved{Timing: TimingFigures{Histogram: map[string]int{}, RacerEnds: map[string]int{}, PerTrial: []TimingTrial{}}}
	window := f.extra.KillWindowUS[c.Pattern]
	for _, i := range c.Trials {
		es, ok := got[i]
		if !ok {
			continue
		}
		if len(es) != 2 {
			f.c.Obs(es[0].l, "trial", "%s round %d has %d steps, want the racers and a recovery", c.Name, i, len(es))
			continue
		}
		rc, rv := es[0], es[1]
		f.rows(pat, rc, StepRacers, c.Racers, "")
		f.rows(pat, rv, StepRecovery, 1, rc.o.DB)
		f.fresh(rc)
		kills := make([]int64, c.Racers)
		if c.Kills {
			kills = RaceKillsUS(f.st.Seed, c.Name, i, c.Racers, window)
			if !slices.Equal(rc.o.KillDelaysUS, kills) {
				f.c.Obs(rc.l, "kill_delays_us", "%v, but seed %d gives round %d of %s %v", rc.o.KillDelaysUS, f.st.Seed, i, c.Name, kills)
			}
		} else if rc.o.KillDelaysUS != nil {
			f.c.Obs(rc.l, "kill_delays_us", "%v, but %s kills no racer", rc.o.KillDelaysUS, c.Name)
		}
		if rc.o.Point != "" || rc.o.K != 0 || rv.o.Point != "" || rv.o.K != 0 || rv.o.KillDelaysUS != nil {
			f.c.Obs(rc.l, "", "a race round crashes at no point and kills only racers")
		}
		if len(rc.o.ProcessIDs) != c.Racers || len(rv.o.ProcessIDs) != 1 {
			continue
		}
		h := History{Items: f.st.Items}
		t := TimingTrial{Trial: i}
		if c.Kills {
			t.KillDelaysUS = kills
		}
		added, killed := 0, false
		for r, id := range rc.o.ProcessIDs {
			w := procWant{label: fmt.Sprintf("trial %06d racer %02d", i, r), worker: pat.Racer, args: RacerArgs(f.st, pat, rc.o.DB), kill: kills[r] > 0, racer: true}
			s, rep, ok := f.proc(rc.l, id, w, RoleRacer, rc.o.Rows)
			h.Steps = append(h.Steps, s)
			if kills[r] > 0 {
				obs.Timing.Kills++
			}
			if !ok {
				continue
			}
			if s.Signal != "" {
				t.Landed++
				killed = true
				obs.Timing.RacerEnds["killed"]++
				continue
			}
			p, _ := f.rec.Process(id)
			cl, err := pat.Claim(rep.Result, true)
			if err != nil {
				f.c.Proc(p, "stdout", "the racer's result: %v", err)
				continue
			}
			if cl.Settings != f.st.SQLite {
				f.c.Proc(p, "stdout", "the racer read back %s, the settings require %s", results.Compact(cl.Settings), results.Compact(f.st.SQLite))
			}
			if (cl.Error != "") != (s.ExitCode == protocol.ExitWorkerError) || (cl.Error == "") != (cl.ErrorClass == "") {
				f.c.Proc(p, "exit_code", "%d, but the racer reports error %q of class %q", s.ExitCode, cl.Error, cl.ErrorClass)
			}
			if cl.Attempts < 1 || cl.Attempts > f.st.MaxAttempts || cl.BusyErrors > cl.Attempts {
				f.c.Proc(p, "stdout", "%d attempts and %d busy errors, but a racer makes 1 to %d attempts", cl.Attempts, cl.BusyErrors, f.st.MaxAttempts)
			}
			end := "ack"
			if cl.ErrorClass != "" {
				end = cl.ErrorClass
			}
			obs.Timing.RacerEnds[end]++
			obs.Timing.BusyErrors += cl.BusyErrors
			obs.Timing.Retries += cl.Attempts - 1
			if cl.WorkAdded {
				added++
			}
		}
		// A killed racer may have committed a job it never reported.
		if jobs := len(rc.o.Rows[TableJobs]); added > jobs || (!killed && added != jobs) {
			f.c.Obs(rc.l, "rows", "%d jobs, but the racers report adding %d", jobs, added)
		}
		s, rep, ok := f.proc(rv.l, rv.o.ProcessIDs[0], procWant{label: label(i, StepRecovery), worker: pat.Worker, args: pat.Args(f.st, files(rv.o))}, RoleRecovery, rv.o.Rows)
		if !ok {
			continue
		}
		f.account(pat, rv.o.ProcessIDs[0], RoleRecovery, rep, s, rc.o.Rows, rv.o.Rows)
		h.Steps = append(h.Steps, s)
		t.Outcome = pat.Classify(f.st, rv.o.Rows)
		obs.Trials++
		obs.Timing.Landed += t.Landed
		obs.Timing.Histogram[t.Outcome]++
		if len(f.violations(pat, c, h, ViolationRecord{Trial: i, KillDelaysUS: t.KillDelaysUS, Racers: c.Racers})) > 0 {
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
