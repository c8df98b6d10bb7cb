package patternfile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
)

// Verdict is a condition's observed figure: whether any trial broke an
// invariant, and the first trial that did, which the failure line says.
type Verdict struct {
	Violated bool `json:"violated"`
	// PowerViolated, on a power condition, says whether some power
	// condition of the pattern broke: what a bare "power" in
	// known_unsafe asks for.
	PowerViolated *bool `json:"power_violated,omitempty"`
	// First is the lowest-numbered trial that broke an invariant, with
	// what it broke.
	First *Violation `json:"first,omitempty"`
}

// scheduledVerdict is the Verdict of a condition the OS schedules (see
// Scheduled): which trial breaks first depends on when the kills and the
// racers ran, so a rerun does not compare it; the verdict it does.
type scheduledVerdict struct {
	Violated bool       `json:"violated"`
	First    *Violation `json:"first,omitempty" idemlab:"measure"`
}

// Extra is the scenario's derived table: per pattern, the points its
// discovery passed and, per condition, what the trials showed.
type Extra struct {
	Patterns []PatternExtra `json:"patterns"`
}

// PatternExtra is one pattern's findings.
type PatternExtra struct {
	Name       string           `json:"name"`
	About      string           `json:"about,omitempty"`
	Points     []string         `json:"points"`
	Conditions []ConditionExtra `json:"conditions"`
}

// ConditionExtra is one condition's trials.
type ConditionExtra struct {
	Name   string `json:"name"`
	Fault  string `json:"fault"`
	Power  string `json:"power,omitempty"`
	Trials int    `json:"trials"`
	// Violating, ViolatingTrials, Broken, First and Failed depend on how
	// the OS schedules the processes in kill trials and races, so a rerun
	// does not compare them; the verdict and the trials do.
	Violating int `json:"violating" idemlab:"measure"`
	// ViolatingTrials are the indices of the trials that broke an
	// invariant, in order: with the discovered points they name the
	// violating crash points, so a sweep can be compared point by point
	// with another implementation's.
	ViolatingTrials []int `json:"violating_trials" idemlab:"measure"`
	// Broken counts the trials that broke each invariant.
	Broken map[string]int `json:"broken" idemlab:"measure"`
	// First is the lowest-numbered trial that broke an invariant.
	First *Violation `json:"first,omitempty" idemlab:"measure"`
	// Failed counts the deliveries whose step failed, by error class.
	Failed map[string]int `json:"failed,omitempty" idemlab:"measure"`
	// Models are a power condition's rows, one per model (engine.PowerModels),
	// in that order: the condition's verdict is the worst of them. A
	// folder of format 4 or older has the drop model's alone.
	Models []ModelExtra `json:"models,omitempty"`
	// Kills are where each kill trial of a program landed among its
	// points, by trial; a kill lands where the OS schedules it, so a rerun
	// does not compare them.
	Kills []KillLanding `json:"kills,omitempty" idemlab:"measure"`
}

// KillLanding is where one kill trial's kill landed.
type KillLanding struct {
	Trial   int    `json:"trial"`
	Landing string `json:"landing"`
}

// Landings of a kill that are not between two points.
const (
	LandedBeforeFirst = "before the first point"
	LandedAfterLast   = "after the last point"
	LandedNoPoints    = "in a program that announces no points"
	LandedNotKilled   = "not killed: the program ended first"
)

// PointsBefore counts the points that arrived at or before the kill, both
// in microseconds from the delivery's start.
func PointsBefore(pointsUS []int64, killUS int64) int {
	n := 0
	for _, at := range pointsUS {
		if at <= killUS {
			n++
		}
	}
	return n
}

// LandingText says where a kill after passed points landed, of the total
// the discovery delivery passed.
func LandingText(passed, total int) string {
	switch {
	case total == 0:
		return LandedNoPoints
	case passed == 0:
		return LandedBeforeFirst
	case passed >= total:
		return LandedAfterLast
	}
	return fmt.Sprintf("between points %d and %d", passed, passed+1)
}

// Landing places a program's kill trial: the kill's time, from the start
// or from the first point's arrival (KillFromFirst), among the arrivals
// the parent recorded; ok is false where the records cannot place it (a
// folder of format 4 or older recorded no arrivals).
func Landing(o Observation, d Delivery, p results.ProcessRecord, fromFirst bool, total int) (string, bool) {
	if len(d.PointsUS) != len(d.Points) {
		return "", false
	}
	if p.KilledBy != "harness" || d.KilledAt != "" || d.TimedOut {
		return LandedNotKilled, true
	}
	at := o.KillUS
	if fromFirst {
		if len(d.PointsUS) == 0 {
			// The kill is armed at the first point: one that never came
			// cannot have been followed by it.
			return "", false
		}
		at += d.PointsUS[0]
	}
	return LandingText(PointsBefore(d.PointsUS, at), total), true
}

// ModelExtra is one power model's trials within a power setting.
type ModelExtra struct {
	Model  string `json:"model"`
	Trials int    `json:"trials"`
	// Violated is the model's verdict: power cuts replay exactly (a named
	// point, a seeded tearing), so a rerun compares it.
	Violated        bool       `json:"violated"`
	Violating       int        `json:"violating" idemlab:"measure"`
	ViolatingTrials []int      `json:"violating_trials" idemlab:"measure"`
	First           *Violation `json:"first,omitempty" idemlab:"measure"`
}

// Violation is a trial that broke an invariant, with what was done to it
// (its observation's trial, kind, point, hit, delay and racers; for a
// crash at the k-th hit, Point is the discovered point it landed on) and
// Broken, the invariants that did not hold, in the file's order, then the
// ACK.
type Violation struct {
	Trial  int      `json:"trial"`
	Kind   string   `json:"kind"`
	Point  string   `json:"point,omitempty"`
	Model  string   `json:"model,omitempty"`
	K      int      `json:"k,omitempty"`
	KillUS int64    `json:"kill_us,omitempty"`
	Racers int      `json:"racers,omitempty"`
	Broken []Broken `json:"broken"`
}

// Broken is one invariant that did not hold: what it wants and what the
// parent read.
type Broken struct {
	Invariant string `json:"invariant"`
	Want      string `json:"want"`
	Got       string `json:"got"`
}

// InvariantACK names the check that some delivery acknowledged the event.
const InvariantACK = "acknowledged"

// Fold judges every trial by its pattern's invariants, from what the
// parent read after the last delivery and the receiver's log, and checks
// every process against the trial's plan.
func Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := folder{st: st, rec: rec, conds: map[string]Condition{}, pats: map[string]Pattern{}, extra: map[string]*ConditionExtra{}, points: map[string][]string{}}
	for _, p := range st.Patterns {
		f.pats[p.File.Name] = p
	}
	f.legacy = legacyPower(rec)
	for _, c := range st.Conditions {
		f.conds[c.Name] = c
		f.extra[c.Name] = &ConditionExtra{Name: c.Name, Fault: c.Fault, Power: c.Power, Broken: map[string]int{}, ViolatingTrials: []int{}}
		if c.Fault == wp.FaultPower {
			for _, m := range f.models() {
				f.extra[c.Name].Models = append(f.extra[c.Name].Models, ModelExtra{Model: m, ViolatingTrials: []int{}})
			}
		}
	}
	f.first = rec.FirstShard()
	engine.Each(&f.c, rec, "a pattern observation", f.conds, f.line)
	f.c.Unused(rec, 1)
	return f.result()
}

type folder struct {
	c      results.Checker
	st     Settings
	rec    results.Records
	conds  map[string]Condition
	pats   map[string]Pattern
	extra  map[string]*ConditionExtra
	points map[string][]string
	// first is the lowest shard of a merged folder's records, whose
	// discovery runs stand for the plan's; ran are the plan's trials the
	// records hold.
	first int
	ran   []shard.Ran
	// legacy says the power trials recorded no model: a folder of format
	// 4 or older, which cut under drop only (PowerPlan).
	legacy bool
	// syncs are the fsyncs each sync-swept condition's sync discovery
	// counted (syncWindow).
	syncs map[string]backend.SyncWindow
	// planned are each condition's trials as the engine plans them from
	// the discovered points (checkPlanned).
	planned map[string]map[planKey]engine.Trial
	// running says, per class, whether the subject runs it (runs), asked once
	// per fold rather than once per line.
	running map[engine.Kind]error
}

// runs is runs(k), asked once per fold.
func (f *folder) runs(k engine.Kind) error {
	if err, ok := f.running[k]; ok {
		return err
	}
	if f.running == nil {
		f.running = map[engine.Kind]error{}
	}
	f.running[k] = runs(k)
	return f.running[k]
}

// legacyPower says whether the records' power trials are a folder of
// format 4 or older: there are some, and none names its model. A folder
// that mixes the two is read as today's, and its trials without a model
// are findings.
func legacyPower(rec results.Records) bool {
	some := false
	for _, l := range rec.Observations {
		var o struct {
			Kind  string `json:"kind"`
			Model string `json:"model"`
		}
		if json.Unmarshal(l.Raw, &o) != nil || o.Kind != KindPower {
			continue
		}
		if o.Model != "" {
			return false
		}
		some = true
	}
	return some
}

// models are the power models of the folder's plan, as ModelExtra names
// them: drop alone for a folder of format 4 or older.
func (f *folder) models() []string {
	if f.legacy {
		return []string{faultvfs.FaultDrop}
	}
	return engine.PowerModels
}

// trialLine is one observation line with what the fold needs of it.
type trialLine struct {
	l    results.Line
	o    Observation
	c    Condition
	pat  Pattern
	acks int
}

// line folds one trial's line: its plan, each delivery, their sequence
// and the invariants, into its condition's tallies.
func (f *folder) line(l results.Line, o Observation, c Condition) {
	t := &trialLine{l: l, o: o, c: c, pat: f.pats[c.Pattern]}
	if o.Kind == KindSyncDiscovery {
		f.checkSyncDiscovery(t)
		return
	}
	if !f.checkPlan(t) {
		return
	}
	for i, d := range o.Deliveries {
		f.delivery(t, i, d)
	}
	f.checkSequence(t)
	f.checkBroker(t)
	broken := f.judge(t)
	if c.Fault == FaultNone && l.Shard != f.first {
		// Another shard's discovery run: checked as any trial, it must
		// have passed the points the first shard's did.
		got, _ := f.pointsOf(t.pat, o)
		results.SameDiscovery(&f.c, l, f.first, "discovery passed", got, f.discovered(t.pat))
		return
	}
	if c.Fault != FaultNone {
		f.ran = append(f.ran, o.ref().Ran(l.Shard))
	}
	ex := f.extra[c.Name]
	ex.Trials++
	if firstFault(c, o, 0).KillUS > 0 && t.pat.File.IsProgram() {
		f.landing(t, ex)
	}
	if len(broken) > 0 {
		ex.Violating++
		ex.ViolatingTrials = append(ex.ViolatingTrials, o.Trial)
		for _, b := range broken {
			ex.Broken[b.Invariant]++
		}
		v := &Violation{Trial: o.Trial, Kind: o.Kind, Point: o.Point, Model: o.Model, K: o.K, KillUS: o.KillUS, Racers: o.Racers, Broken: broken}
		if points := f.discovered(t.pat); !o.race() && o.K >= 1 && o.K <= len(points) {
			v.Point = points[o.K-1]
		}
		// The first by trial number, not by line: parallel trials, and
		// shards, record in any order.
		if ex.First == nil || o.Trial < ex.First.Trial {
			ex.First = v
		}
		if m := ex.model(o.Model); m != nil && (m.First == nil || o.Trial < m.First.Trial) {
			m.First = v
		}
	}
	if m := ex.model(o.Model); m != nil {
		m.Trials++
		if len(broken) > 0 {
			m.Violated = true
			m.Violating++
			m.ViolatingTrials = append(m.ViolatingTrials, o.Trial)
		}
	}
}

// landing records where a program's kill trial's kill landed.
func (f *folder) landing(t *trialLine, ex *ConditionExtra) {
	d := t.o.Deliveries[0]
	p, ok := f.rec.Process(d.ProcessID)
	if !ok {
		return
	}
	points := f.discovered(t.pat)
	if where, ok := Landing(t.o, d, p.ProcessRecord, KillFromFirst(t.pat, points), len(points)); ok {
		ex.Kills = append(ex.Kills, KillLanding{Trial: t.o.Trial, Landing: where})
	}
}

// model is a power condition's row of the model a trial recorded; nil
// outside the power class. A trial without a model is drop's.
func (e *ConditionExtra) model(name string) *ModelExtra {
	if name == "" {
		name = faultvfs.FaultDrop
	}
	for i := range e.Models {
		if e.Models[i].Model == name {
			return &e.Models[i]
		}
	}
	return nil
}

// checkPlan checks that the trial is one its condition plans: a class of
// the condition's fault word the subject runs, and, for every trial but
// a sync-point cut (checkSyncCut), the fields the engine's plan gives
// its class and index from the discovered points (checkPlanned).
func (f *folder) checkPlan(t *trialLine) bool {
	var want []string
	for _, k := range engine.ClassesOf(t.c.Fault) {
		want = append(want, engine.Label(engine.Pattern, k))
	}
	k, ok := engine.KindOf(engine.Pattern, t.o.Kind)
	if !ok || !slices.Contains(want, t.o.Kind) {
		f.c.Obs(t.l, "kind", "%q is not a trial of a %s condition (want %v)", t.o.Kind, t.c.Fault, want)
		return false
	}
	if err := f.runs(k); err != nil {
		f.c.Obs(t.l, "kind", "%q is a trial the pattern subject does not run (%v): nothing applied or checked its fault", t.o.Kind, err)
		return false
	}
	if len(t.o.Deliveries) == 0 {
		f.c.Obs(t.l, "deliveries", "none recorded; every trial delivers at least once")
		return false
	}
	if cut, ok := syncCutOf(t.o); ok {
		f.checkSyncCut(t, cut)
		return true
	}
	f.checkPlanned(t, k)
	if !firstFault(t.c, t.o, 0).Power {
		return true
	}
	switch {
	case onServerPower(t.c):
		f.checkPGPower(t)
	case t.pat.File.IsProgram():
		f.checkPowerFS(t)
	default:
		f.checkRecovery(t)
	}
	return true
}

// planKey is a trial of a condition's plan: its class and index.
type planKey struct {
	class engine.Kind
	index int
}

// checkPlanned checks the trial's fields against the trial of class k
// and its index that the engine plans for the condition from the
// discovered points: the point, power model, hit, racers and their hits.
// The discovery (None) is trial 0 with none of them. A delay kill's
// delay is drawn over the kill window each shard's own discovery
// measured, so only the fields the points and seed give are compared.
func (f *folder) checkPlanned(t *trialLine, k engine.Kind) {
	if f.planned == nil {
		f.planned = map[string]map[planKey]engine.Trial{}
	}
	plan, ok := f.planned[t.c.Name]
	if !ok {
		plan = map[planKey]engine.Trial{}
		for _, p := range f.st.plan(t.c, f.legacy, f.discovered(t.pat)) {
			plan[planKey{p.Class, p.Index}] = p
		}
		f.planned[t.c.Name] = plan
	}
	p, ok := plan[planKey{k, t.o.Trial}]
	if k == engine.None {
		// The discovery delivery, which Run.Execute makes before any
		// plan: trial 0, no fault.
		p, ok = engine.Trial{Class: engine.None, Condition: t.c.Name}, t.o.Trial == 0
	}
	if !ok {
		f.c.Obs(t.l, "trial", "%d: the plan of %s has no %s trial %d (from the discovered points %v)", t.o.Trial, t.c.Name, t.o.Kind, t.o.Trial, f.discovered(t.pat))
		return
	}
	for _, x := range []struct {
		field     string
		got, want any
	}{
		{"point", t.o.Point, p.Point}, {"model", t.o.Model, p.Model}, {"k", t.o.K, p.K},
		{"racers", t.o.Racers, p.Racers}, {"race_crash_k", t.o.RaceCrashK, p.CrashK},
	} {
		if fmt.Sprint(x.got) != fmt.Sprint(x.want) {
			f.c.Obs(t.l, x.field, "is %v, but the plan gives %v for %s trial %d (seed %d, the discovered points %v)", x.got, x.want, t.o.Kind, t.o.Trial, f.st.Seed, f.discovered(t.pat))
		}
	}
}

// delivery checks one delivery's process: its command line and
// environment against the plan, its exit against what the plan allows,
// and an acknowledging worker's claims against the receiver's log.
func (f *folder) delivery(t *trialLine, i int, d Delivery) {
	p, ok := f.c.Use(f.rec, t.l, d.ProcessID)
	if !ok {
		return
	}
	if t.pat.File.IsProgram() {
		f.programDelivery(t, i, d, p)
		return
	}
	if d.Consumer != 0 {
		f.c.Obs(t.l, results.Field("deliveries", i, "consumer_id"), "is %d, but only a program's delivery has a consumer of its own", d.Consumer)
	}
	if f.st.Broker != nil && t.o.Broker != nil {
		f.c.Argv(p, wp.ConsumerName, ConsumeArgs(f.st, t.c, t.o, d).Argv())
	} else {
		f.c.Argv(p, wp.WorkerName, Args(f.st, t.o, d).Argv())
	}
	f.c.Env(p, Env(t.c, t.o, d))
	who := fmt.Sprintf("delivery %d", d.Number)
	if t.o.race() && d.Number == 1 {
		who = fmt.Sprintf("racer %d", d.Worker)
	}
	if early := f.ackedBefore(t, i, p); early && !(p.ExitCode == protocol.ExitACK && p.Signal == "") {
		// Acknowledged at the ack step, then crashed, killed or failed:
		// the event counts as delivered.
		t.acks++
	}
	f.checkAckStep(t, i, p, who)
	switch {
	case p.Signal != "":
		if p.KilledBy != "harness" || !f.killPlanned(t, i) {
			f.c.Proc(p, "signal", "%s died from %s, which no fault of the trial sends%s", who, p.Signal, tail(p.Stderr))
		}
		return
	case p.ExitCode == protocol.ExitCrash:
		if !crashPlanned(t.c, t.o, i) {
			f.c.Proc(p, "exit_code", "%s exited 17 (crash), but the trial planned no crash for it", who)
		}
		f.checkCrash(t, p, i, who)
		return
	case p.ExitCode == protocol.ExitACK:
		t.acks++
		f.checkClaims(t, p, d, who)
	case p.ExitCode == protocol.ExitStepFailed:
		if rep, ok := f.c.Report(p); ok {
			var r wp.Result
			if err := results.DecodeStrict(rep.Result, &r); err == nil && r.Outcome.ErrorClass != "" {
				f.extra[t.c.Name].failed(r.Outcome.ErrorClass)
			}
		}
	default:
		f.c.Proc(p, "exit_code", "%s exited %d, which is no outcome of a delivery (0 ACK, 17 crash, 18 step failed)%s", who, p.ExitCode, tail(p.Stderr))
	}
}

// checkAckStep is the ack step's oracle: a delivery whose crash the
// trial placed at a named point (a point or power trial's, or the k-th
// hit of a crash-after-hits trial, on the discovered points) acked when,
// and only when, that point comes after the ack step's own "after" point
// or is it. A delivery that exited 0 or failed a step passed its ack step
// when the handler's path reached it: its report says how far it got, and
// it must say so on its standard error too.
func (f *folder) checkAckStep(t *trialLine, i int, p results.Process, who string) {
	n := t.pat.File.AckStep()
	early := ackedEarly(p.ProcessRecord)
	if n == 0 {
		// On a broker the consumer writes every ack the server
		// accepted, the one after the last step too.
		switch {
		case f.killedOnBroker(t, i, p):
			// Killed between the server's answer and its exit: its
			// line, or its exit, may be missing.
		case early && f.st.Broker == nil:
			f.c.Proc(p, "stderr", "%s acknowledged at an ack step, but the handler has none", who)
		case early && (p.ExitCode != protocol.ExitACK || p.Signal != ""):
			f.c.Proc(p, "stderr", "%s acknowledged and then did not exit 0, but the handler has no ack step: its ack follows the last step", who)
		}
		return
	}
	_, after := t.pat.File.Handler[n-1].Points(n - 1)
	switch {
	case p.Signal != "":
		return // a kill after a delay lands where the scheduler says
	case p.ExitCode == protocol.ExitCrash && i == 0 && !t.o.race() && firstFault(t.c, t.o, 0).crashes():
		points := f.discovered(t.pat)
		fl := firstFault(t.c, t.o, 0)
		at := fl.At
		if fl.Hit >= 1 && fl.Hit <= len(points) {
			at = points[fl.Hit-1]
		}
		k, ak := slices.Index(points, at), slices.Index(points, after)
		if want := ak >= 0 && k >= ak; early != want {
			f.c.Proc(p, "stderr", "%s crashed at %q and acked=%v, but the ack step's point %q %s it", who, at, early, after, map[bool]string{true: "is at or before", false: "is not at or before"}[want])
		}
	case p.ExitCode == protocol.ExitACK || p.ExitCode == protocol.ExitStepFailed:
		rep, err := protocol.ParseReport(p.Stdout)
		if err != nil {
			return
		}
		want := slices.Contains(rep.Points, after)
		if f.st.Broker != nil && p.ExitCode == protocol.ExitACK {
			want = true // at the ack step, or after a stop before it
		}
		if early != want {
			f.c.Proc(p, "stderr", "%s passed %d points and acked=%v at the ack step, but it %s its point %q", who, len(rep.Points), early, map[bool]string{true: "passed", false: "did not pass"}[want], after)
		}
	}
}

// checkCrash checks where a crash happened: at the trial's point, or at
// the k-th point passed for a crash-after-hits trial.
func (f *folder) checkCrash(t *trialLine, p results.Process, i int, who string) {
	k := firstFault(t.c, t.o, i).Hit
	if t.o.race() && i >= t.o.Racers || !t.o.race() && i != 0 || k == 0 {
		f.c.Report(p)
		return
	}
	rep, err := protocol.ParseReport(p.Stdout)
	if err != nil {
		f.c.Proc(p, "stdout", "%s: %v", who, err)
		return
	}
	if k < 1 || len(rep.Points) != k || rep.CrashedAt != rep.Points[k-1] {
		f.c.Proc(p, "stdout", "%s crashed at %q after %d points, but the trial crashes it at hit %d", who, rep.CrashedAt, len(rep.Points), k)
	}
}

func (e *ConditionExtra) failed(class string) {
	if e.Failed == nil {
		e.Failed = map[string]int{}
	}
	e.Failed[class]++
}

// crashPlanned says whether the i-th delivery of the trial was to crash:
// a first delivery (a racer, in a race) whose fault stops it at a point.
func crashPlanned(c Condition, o Observation, i int) bool {
	first := i == 0
	if o.race() {
		first = i < o.Racers
	}
	return first && firstFault(c, o, i).crashes()
}

// killPlanned says whether the harness was to kill the i-th delivery: a
// first delivery after its fault's delay, or at its sync-point cut.
func (f *folder) killPlanned(t *trialLine, i int) bool {
	fl := firstFault(t.c, t.o, 0)
	return i == 0 && !t.o.race() && (fl.KillUS > 0 || fl.Sync)
}

// checkClaims cross-checks an acknowledging worker's report: the settings
// it read back, and that every send it claims is in the receiver's log.
func (f *folder) checkClaims(t *trialLine, p results.Process, d Delivery, who string) {
	rep, ok := f.c.Report(p)
	if !ok {
		return
	}
	var r wp.Result
	if err := results.DecodeStrict(rep.Result, &r); err != nil {
		f.c.Proc(p, "stdout", "%s's report is not a delivery result: %v", who, err)
		return
	}
	switch {
	case f.st.Postgres != nil:
		if want := f.st.requested(t.c); r.Postgres == nil || !want.Matches(r.Postgres.Requested()) {
			f.c.Proc(p, "stdout", "%s read back %s, the run asks for %s", who, results.Compact(r.Postgres), results.Compact(want))
		}
	case r.Postgres != nil:
		f.c.Proc(p, "stdout", "%s read back PostgreSQL's settings on a SQLite run", who)
	default:
		if want := settingsOf(t.c); r.Settings != want {
			f.c.Proc(p, "stdout", "%s read back %s, the trial runs %s", who, results.Compact(r.Settings), results.Compact(want))
		}
	}
	// A delivery's claims are matched with the sends its sender token
	// names, whenever they landed; a folder of format 4 has no tokens,
	// and its claims are matched over the trial's whole log.
	tok := DeliverySender(t.o, d)
	logged := map[[2]string]int{}
	for _, e := range t.o.Sends {
		if tok == "" || e.Sender == tok {
			logged[[2]string{e.Step, e.Outcome}]++
		}
	}
	for _, s := range r.Outcome.Sends {
		k := [2]string{s.Step, s.Outcome}
		if logged[k] == 0 {
			f.c.Proc(p, "stdout", "%s reported a %s send of %q, but the receiver's log has no such send", who, s.Outcome, s.Step)
			continue
		}
		logged[k]--
	}
}

// settingsOf is what an acknowledging worker must read back.
func settingsOf(c Condition) sqlitedb.Settings {
	s := SQLite()
	if c.Fault == wp.FaultPower {
		s.JournalMode, s.Synchronous = SplitPower(c.Power)
		s.VFS = faultvfs.Name
	}
	return s
}

// checkSequence checks the deliveries' order: racers first in a race,
// then numbers from 2 with the pattern's redelivery offset, none after an
// ACK and none beyond max_deliveries.
func (f *folder) checkSequence(t *trialLine) {
	n, next := 0, 1
	if t.o.race() {
		for n < len(t.o.Deliveries) && t.o.Deliveries[n].Number == 1 {
			if t.o.Deliveries[n].Worker != n {
				f.c.Obs(t.l, results.Field("deliveries", n, "worker"), "is %d, want %d: racers are recorded in slot order", t.o.Deliveries[n].Worker, n)
			}
			n++
		}
		if n != t.o.Racers {
			f.c.Obs(t.l, "deliveries", "%d racers recorded, the trial has %d", n, t.o.Racers)
		}
		next = 2
	}
	acked := false
	for ; n < len(t.o.Deliveries); n++ {
		d := t.o.Deliveries[n]
		wantOffset := int64(0)
		if next > 1 {
			wantOffset = t.pat.File.RedeliveryAfterMS
		}
		if d.Number != next || d.Worker != 0 || d.OffsetMS != wantOffset {
			f.c.Obs(t.l, results.Field("deliveries", n), "is delivery %d (worker %d, offset %d ms), want delivery %d (worker 0, offset %d ms)", d.Number, d.Worker, d.OffsetMS, next, wantOffset)
		}
		if acked {
			f.c.Obs(t.l, results.Field("deliveries", n), "delivery %d came after an ACK; an acknowledged event is not redelivered", d.Number)
		}
		if p, ok := f.rec.Process(d.ProcessID); ok && f.acked(t, n, p) || n == 0 && ackOpenCut(t.pat, t.c, t.o, d) {
			acked = true
		}
		next++
	}
	if next-1 > t.pat.MaxDeliveries {
		f.c.Obs(t.l, "deliveries", "%d deliveries, but max_deliveries is %d", next-1, t.pat.MaxDeliveries)
	}
	if !acked && t.acks == 0 && next-1 < t.pat.MaxDeliveries && !t.o.race() {
		f.c.Obs(t.l, "deliveries", "redelivery stopped after %d deliveries without an ACK, before max_deliveries (%d)", next-1, t.pat.MaxDeliveries)
	}
}

// trialName names a trial in a finding.
func trialName(o Observation) string {
	if o.Kind == KindDiscovery {
		return "the discovery delivery (no faults)"
	}
	return fmt.Sprintf("trial %d", o.Trial)
}

// judge evaluates every invariant on what the parent read, and the ACK.
func (f *folder) judge(t *trialLine) []Broken {
	var out []Broken
	sends := receiver.AcceptedSends(t.o.Sends, f.st.EventID)
	want := []string{}
	for _, iv := range t.pat.File.Invariants {
		var got int64
		if iv.Sends != nil {
			got = sends[iv.Sends.Step]
		} else {
			want = append(want, iv.Name)
			v, ok := t.o.Values[iv.Name]
			if !ok {
				f.c.Obs(t.l, "values", "has no value of invariant %q", iv.Name)
				continue
			}
			// A query that did not return one integer held nothing and
			// broke nothing: a finding fails the condition, whatever its
			// known_unsafe says, from the discovery trial on.
			verdict, err := iv.JudgeValue(v)
			if err != nil {
				f.c.Obs(t.l, "values", "%s: %v", trialName(t.o), err)
				continue
			}
			if !verdict.Held {
				out = append(out, Broken{Invariant: iv.Name, Want: verdict.Want, Got: fmt.Sprint(verdict.Got)})
			}
			continue
		}
		if v := iv.Judge(got); !v.Held {
			out = append(out, Broken{Invariant: iv.Name, Want: v.Want, Got: fmt.Sprint(v.Got)})
		}
	}
	if got, want := slices.Sorted(maps.Keys(t.o.Values)), slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
		f.c.Obs(t.l, "values", "names %v, the pattern's query invariants are %v", got, want)
	}
	senders := map[string]bool{}
	for _, d := range t.o.Deliveries {
		senders[DeliverySender(t.o, d)] = true
	}
	for _, e := range t.o.Sends {
		if e.Item != f.st.EventID || e.Job != "" {
			f.c.Obs(t.l, "sends", "holds a send of %q, but the trial delivers only %q", e.Item, f.st.EventID)
		}
		if t.o.Senders && !senders[e.Sender] {
			f.c.Obs(t.l, "sends", "send %d names sender %s, no delivery of the trial; each delivery sends with the token of the receiver URL it was given", e.Seq, e.Sender)
		}
	}
	if fl := firstFault(t.c, t.o, 0); t.acks == 0 && !fl.ACK && !fl.AckOpen {
		n, what := len(t.o.Deliveries), "deliveries"
		if n == 1 {
			what = "delivery"
		}
		out = append(out, Broken{Invariant: InvariantACK, Want: "an ACK", Got: fmt.Sprintf("none of %d %s", n, what)})
	}
	return out
}

func (f *folder) result() (scenario.Folded, []results.Finding) {
	folded := scenario.Folded{Observed: map[string]any{}}
	var ex Extra
	for _, p := range f.st.Patterns {
		pe := PatternExtra{Name: p.File.Name, About: p.File.About, Points: f.discovered(p)}
		for _, c := range f.st.Conditions {
			if c.Pattern != p.File.Name {
				continue
			}
			ce := f.extra[c.Name]
			// Trials run in parallel, so they are recorded in any order.
			slices.Sort(ce.ViolatingTrials)
			for i := range ce.Models {
				slices.Sort(ce.Models[i].ViolatingTrials)
			}
			slices.SortFunc(ce.Kills, func(a, b KillLanding) int { return a.Trial - b.Trial })
			folded.Observed[c.Name] = f.verdict(p, c, ce)
			pe.Conditions = append(pe.Conditions, *ce)
		}
		ex.Patterns = append(ex.Patterns, pe)
	}
	folded.Extra = ex
	folded.Plan, folded.Discovered, folded.Ran = f.plan(), f.discoveredAll(), f.ran
	f.vacuous(folded.Plan)
	return folded, f.c.Findings
}

// vacuous makes a finding of every fault class whose whole plan holds no
// trial: a class that tested nothing held nothing, so it cannot pass.
func (f *folder) vacuous(plan []shard.Trial) {
	planned := map[string]int{}
	for _, t := range plan {
		planned[t.Condition]++
	}
	for _, c := range f.st.Conditions {
		if c.Fault == FaultNone || planned[c.Name] > 0 {
			continue
		}
		why := "its settings give it none"
		switch c.Fault {
		case wp.FaultPoints:
			why = "the discovery delivery announced no point to crash at; announce points, or leave points out of --faults"
		case wp.FaultRandom:
			why = fmt.Sprintf("--trials gives %d crash and %d kill trials", f.st.HitTrials, f.st.KillTrials)
		case wp.FaultConcurrent:
			why = fmt.Sprintf("racers %v and %d rounds give no race", f.st.Racers, f.st.Rounds)
		}
		f.c.AddTo(c.Name, results.ResultsFile, "plan", "%s plans no trials (%s): a class that tested nothing cannot pass", c.Name, why)
	}
}

// VerdictOf is condition c's observed figure from the conditions'
// tallies, as the fold derives it.
func VerdictOf(st Settings, extra map[string]*ConditionExtra, p Pattern, c Condition) any {
	f := folder{st: st, extra: extra}
	return f.verdict(p, c, extra[c.Name])
}

// verdict is a condition's observed figure: a scheduled condition's first
// violation is a measurement, and a power condition says whether some
// power condition of its pattern broke.
func (f *folder) verdict(p Pattern, c Condition, ce *ConditionExtra) any {
	if c.Scheduled() {
		return scheduledVerdict{Violated: ce.Violating > 0, First: ce.First}
	}
	v := Verdict{Violated: ce.Violating > 0, First: ce.First}
	if c.Fault == wp.FaultPower {
		some := slices.ContainsFunc(f.st.Conditions, func(o Condition) bool {
			return o.Pattern == p.File.Name && o.Fault == wp.FaultPower && f.extra[o.Name].Violating > 0
		})
		v.PowerViolated = &some
	}
	return v
}

// plan lists every trial of the whole plan from the settings and the
// points each pattern's discovery passed; the discovery runs are not
// trials of it, since every shard runs them.
func (f *folder) plan() []shard.Trial {
	out := []shard.Trial{}
	for _, p := range f.st.Patterns {
		for _, c := range f.st.Conditions {
			if c.Pattern == p.File.Name {
				out = append(out, engine.Listed(f.st.plan(c, f.legacy, f.discovered(p)))...)
				if f.st.syncSwept(c, p) {
					w := f.syncWindow(c)
					ts, _ := engine.Plan(context.Background(), f.st.Seed, nil, syncSets(c, f.rec.Since(results.FormatPowerLines)), engine.Found{SyncsFrom: w.From, Syncs: w.To})
					out = append(out, engine.Listed(ts)...)
				}
			}
		}
	}
	return out
}

func (f *folder) discoveredAll() map[string][]string {
	out := map[string][]string{}
	for _, p := range f.st.Patterns {
		out[p.File.Name] = f.discovered(p)
	}
	return out
}

// discovered reads the points a pattern's discovery delivery passed: from
// its report, or for a program from what the parent saw on its socket.
// Every trial's check asks, so the answer is kept per pattern (read once,
// where each of 100,000 trials decoded the discovery line and its report
// again).
func (f *folder) discovered(p Pattern) []string {
	if points, ok := f.points[p.File.Name]; ok {
		return points
	}
	// Clipped: a caller's append makes its own copy.
	points := slices.Clip(f.discover(p))
	if f.points == nil {
		f.points = map[string][]string{}
	}
	f.points[p.File.Name] = points
	return points
}

func (f *folder) discover(p Pattern) []string {
	for _, l := range f.rec.Observations {
		if l.Condition != p.File.Name+"/"+FaultNone {
			continue
		}
		var o Observation
		if results.DecodeStrict(l.Raw, &o) != nil || len(o.Deliveries) == 0 {
			continue
		}
		if points, ok := f.pointsOf(p, o); ok {
			return points
		}
	}
	return []string{}
}

// pointsOf reads the points a discovery delivery passed; ok is false when
// it has no readable report.
func (f *folder) pointsOf(p Pattern, o Observation) ([]string, bool) {
	if len(o.Deliveries) == 0 {
		return nil, false
	}
	if p.File.IsProgram() {
		return append([]string{}, o.Deliveries[0].Points...), true
	}
	if pr, ok := f.rec.Process(o.Deliveries[0].ProcessID); ok {
		if rep, err := protocol.ParseReport(pr.Stdout); err == nil {
			return rep.Points, true
		}
	}
	return nil, false
}

func tail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	return ": " + strings.TrimSpace(s[strings.LastIndex(s, "\n")+1:])
}

// programDelivery checks a program's delivery: its command and
// environment, and that every kill the parent made was one the trial
// planned, at the planned point. Any exit is an outcome: 0 is the ACK.
func (f *folder) programDelivery(t *trialLine, i int, d Delivery, p results.Process) {
	who := fmt.Sprintf("delivery %d", d.Number)
	if t.o.race() && d.Number == 1 {
		who = fmt.Sprintf("racer %d", d.Worker)
	}
	if p.Worker != harness.ProgramWorker || !slices.Equal(p.Argv, t.pat.File.Command) {
		f.c.Proc(p, "argv", "is %s %q, the pattern's command is %q", p.Worker, p.Argv, t.pat.File.Command)
	}
	env := withPowerEnv(t.c, ProgramEnv(f.st, t.o, d))
	if d.Consumer != 0 && f.st.Broker != nil {
		// On a broker the consumer adds the message's variables: its
		// id, and the broker's count, which is the delivery's number.
		maps.Copy(env, wp.MessageEnv(f.st.EventID, uint64(d.Number)))
	}
	f.c.Env(p, env)
	f.programConsumer(t, i, d, p)
	if d.SocketCut > 0 {
		f.c.Obs(t.l, results.Field("deliveries", i, "socket_cut"), "%s sent %d bytes on its points socket past its caps, which were not kept (a line is kept up to %d bytes, stray text up to %d and point names up to %d in all)", who, d.SocketCut, harness.SocketLineCap, harness.StrayCap, harness.PointsCap)
	}
	if d.PointsUS != nil && len(d.PointsUS) != len(d.Points) {
		f.c.Obs(t.l, results.Field("deliveries", i, "points_us"), "has %d arrivals for %d points", len(d.PointsUS), len(d.Points))
	}
	for _, line := range d.Stray {
		f.c.Obs(t.l, results.Field("deliveries", i, "stray"), "%s wrote %q on its points socket, which is not \"point NAME\"", who, line)
	}
	if d.KilledAt != "" && !f.plannedKillAt(t, i, d) {
		f.c.Obs(t.l, results.Field("deliveries", i, "killed_at"), "%s was killed at %q after %d points, which is not where the trial kills it", who, d.KilledAt, len(d.Points))
	}
	byHarness := p.KilledBy == "harness"
	switch {
	case byHarness && d.KilledAt == "" && !d.TimedOut && !f.killPlanned(t, i):
		f.c.Proc(p, "killed_by", "%s was killed by the harness, but the trial plans no kill for it", who)
	case !byHarness && (d.KilledAt != "" || d.TimedOut):
		f.c.Proc(p, "killed_by", "%s is recorded as killed at a point or on its timeout, but not by the harness", who)
	}
	if ackedRecord(p.ProcessRecord) {
		t.acks++
	}
}

// plannedKillAt says whether a kill at d.KilledAt is the trial's: a
// first delivery (a racer's, in a race), killed at the last point it
// announced, where its fault stops it.
func (f *folder) plannedKillAt(t *trialLine, i int, d Delivery) bool {
	n := len(d.Points)
	if n == 0 || d.Points[n-1] != d.KilledAt || d.Number != 1 || !t.o.race() && i != 0 {
		return false
	}
	last := ""
	if pts := f.discovered(t.pat); len(pts) > 0 {
		last = pts[len(pts)-1]
	}
	kill := firstFault(t.c, t.o, d.Worker).killAt(last)
	return kill != nil && kill(d.KilledAt, n)
}

// modelName names a power trial's model; a trial without one is drop's.
func modelName(m string) string {
	if m == "" {
		return faultvfs.FaultDrop
	}
	return m
}

// checkRecovery checks a power trial's record of the cut: it was made
// under the trial's model (and, torn, its seed and unit), and the files it
// lists, and the torn decisions, are those the op log it carries calls for.
func (f *folder) checkRecovery(t *trialLine) {
	r := t.o.Recovery
	if r == nil {
		f.c.Obs(t.l, "recovery", "missing: a power trial records what its cut left")
		return
	}
	want := RecoveryOptions(f.st, t.o)
	if got := (faultvfs.Options{Fault: r.Fault, Seed: r.Seed, Unit: r.Unit}); got != want {
		field := map[bool]string{true: "recovery.fault", false: "recovery.seed"}[got.Fault != want.Fault]
		if got.Fault == want.Fault && got.Seed == want.Seed {
			field = "recovery.unit"
		}
		f.c.Obs(t.l, field, "the cut was made under %s (seed %d, unit %d), but the trial's is %s (seed %d, unit %d)", r.Fault, r.Seed, r.Unit, want.Fault, want.Seed, want.Unit)
		return
	}
	d, err := faultvfs.Derive(r.Log, want)
	if err != nil {
		f.c.Obs(t.l, "recovery.log", "%v", err)
		return
	}
	type row struct{ Name, Action string }
	var planned, listed []row
	for _, a := range d.Plan {
		planned = append(planned, row{a.Name, a.Kind})
	}
	for _, fr := range r.Files {
		if fr.Reason != faultvfs.ReasonShm {
			listed = append(listed, row{fr.Name, fr.Action})
		}
	}
	if !slices.Equal(planned, listed) || len(d.Torn) != len(r.Torn) {
		f.c.Obs(t.l, "recovery.files", "lists %v, but its log calls for %v", listed, planned)
		return
	}
	for i := range d.Torn {
		if a, b := d.Torn[i], r.Torn[i]; a.Name != b.Name || a.Decisions != b.Decisions || !slices.Equal(a.Spans, b.Spans) {
			f.c.Obs(t.l, results.Field("recovery", "torn", i), "decides %q for %s, but its log and seed give %q", b.Decisions, b.Name, a.Decisions)
		}
	}
}

// SplitPower reads a SQLite power setting, JOURNAL_MODE/SYNCHRONOUS.
func SplitPower(s string) (journalMode, synchronous string) {
	j, sy, _ := strings.Cut(s, "/")
	return j, sy
}
