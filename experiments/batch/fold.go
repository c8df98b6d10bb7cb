package batch

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
)

// clockSlack absorbs the rounding of updated_at, a REAL of seconds, when
// it is compared with a process's window.
const clockSlack = time.Millisecond

// Fold derives every condition's outcome from the records alone.
//
// Parent-witnessed: exit codes and process windows (raw-processes.jsonl),
// every send and its outcome (the receiver's log), the journal's rows and
// which of them a process wrote (updated_at inside its window), and the
// lookups behind each resolve. From these come the accepts, duplicates,
// sent-once items, notify steps executed, every journal-mode executed
// count, skipped counts, the final rows by status and the resolves.
//
// The child's word, each cross-checked: a run's status, held list,
// failed step and error type, crash point, points passed, validate and
// transform counts without a journal, the pragmas it read back and its
// in-worker time.
func (s Scenario) Fold(raw json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{rec: rec}
	folded := scenario.Folded{Observed: map[string]any{}}
	if err := scenario.DecodeStrict(raw, &f.st); err != nil {
		f.c.Add(results.ResultsFile, "scenarios[batch].settings", "not batch settings: %v", err)
		return folded, f.c.Findings
	}
	f.conds = map[string]*condFold{}
	for _, c := range f.st.Conditions {
		f.conds[c.Name] = &condFold{c: c, p: f.st.Params(c), journal: UsesJournal(f.st.Params(c))}
	}
	dbs := map[string]string{}
	for _, l := range rec.Observations {
		var o Observation
		if err := results.DecodeStrict(l.Raw, &o); err != nil {
			f.c.Obs(l, "", "not a batch observation: %v", err)
			continue
		}
		cf, ok := f.conds[o.Condition]
		if !ok {
			f.c.Obs(l, "condition", "%q is not a condition in the settings", o.Condition)
			continue
		}
		tf := cf.trialFor(f, l, o.Trial)
		if tf == nil {
			continue
		}
		if tf.lines == 0 && o.DB != "" {
			key := o.DB
			if other, dup := dbs[key]; dup {
				f.c.Obs(l, "db", "%s is also %s's file; every trial starts on a fresh journal", o.DB, other)
			}
			dbs[key] = fmt.Sprintf("%s trial %d", o.Condition, o.Trial)
		}
		f.line(cf, tf, l, o)
	}
	ex := Extra{Trials: []TrialTiming{}, Timings: []TimingSummary{}}
	laneTrials := map[string][]TrialTiming{}
	for _, c := range f.st.Conditions {
		cf := f.conds[c.Name]
		if cf.trials == nil {
			continue
		}
		var outs []Outcome
		var times []TrialTiming
		for i, tf := range cf.trials {
			if tf == nil {
				f.c.AddTo(c.Name, results.ObservationsFile, "condition "+c.Name, "trial %d has no lines; the settings give %d trials", i+1, f.st.Trials)
				continue
			}
			if !tf.done() {
				f.c.AddTo(c.Name, results.ObservationsFile, "condition "+c.Name, "trial %d stops after %d lines; its script has more runs or resolves", i+1, tf.lines)
			}
			outs = append(outs, tf.outcome(cf))
			tt := tf.timing(f.st, c)
			times = append(times, tt)
			lane := laneOf(f.st, c)
			laneTrials[lane] = append(laneTrials[lane], tt)
		}
		folded.Observed[c.Name] = outs
		ex.Trials = append(ex.Trials, times...)
		ex.Timings = append(ex.Timings, Summarise(f.st, c, times))
	}
	// Lanes run side by side, so the wall's floor is the slowest lane's.
	var wallFloor float64
	for _, ts := range laneTrials {
		wallFloor = max(wallFloor, laneFloor(ts, f.st.FirstRunLanes))
	}
	ex.Wall = wall(f.st, rec, wallFloor)
	f.c.Unused(rec, 1)
	if len(folded.Observed) > 0 {
		folded.Extra = ex
	}
	return folded, f.c.Findings
}

type folder struct {
	st    Settings
	rec   results.Records
	c     results.Checker
	conds map[string]*condFold
}

type condFold struct {
	c       Condition
	p       Params
	journal bool
	trials  []*trialFold
}

// trialFold follows one trial's lines in order, replaying the script to
// know which process each line must be.
type trialFold struct {
	n        int
	script   []Action
	next     int
	pending  []wb.Key
	resolveJ string
	lines    int
	receiver string
	db       string
	seq      int
	armed    bool
	idem     map[string]string
	accepts  map[wb.Key]string
	sends    []receiver.Entry
	rows     []JournalRow
	runs     []RunObs
	resolved []ResolveObs
	timings  []RunTiming
	lastHeld []string
}

// trialFor returns the trial a line belongs to. Trials may interleave,
// since first runs go side by side, but each trial's own lines follow its
// script in order.
func (cf *condFold) trialFor(f *folder, l results.Line, n int) *trialFold {
	if n < 1 || n > f.st.Trials {
		f.c.Obs(l, "trial", "is %d, but the condition's trials are 1 to %d", n, f.st.Trials)
		return nil
	}
	if cf.trials == nil {
		cf.trials = make([]*trialFold, f.st.Trials)
	}
	if cf.trials[n-1] == nil {
		cf.trials[n-1] = &trialFold{n: n, script: Script(cf.p), armed: Injects(cf.p), idem: map[string]string{}, accepts: map[wb.Key]string{}, rows: []JournalRow{}}
	}
	return cf.trials[n-1]
}

func (tf *trialFold) done() bool {
	return len(tf.pending) == 0 && tf.next == len(tf.script)
}

// expect advances the script to the process the next line must be: a run,
// or a resolve of the next send the parent's last journal read left
// unfinished.
func (tf *trialFold) expect() (a Action, k wb.Key, ok bool) {
	for {
		if len(tf.pending) > 0 {
			return Action{Kind: ActResolveHeld, Job: tf.resolveJ}, tf.pending[0], true
		}
		if tf.next >= len(tf.script) {
			return Action{}, wb.Key{}, false
		}
		a = tf.script[tf.next]
		tf.next++
		if a.Kind == ActRun {
			return a, wb.Key{}, true
		}
		tf.pending, tf.resolveJ = HeldUnknown(tf.rows, a.Job), a.Job
	}
}

// window is a process's start and end as the parent recorded them.
type window struct{ start, end time.Time }

func (w window) holds(t time.Time) bool {
	return !t.Before(w.start.Add(-clockSlack)) && !t.After(w.end.Add(clockSlack))
}

func (f *folder) line(cf *condFold, tf *trialFold, l results.Line, o Observation) {
	tf.lines++
	a, key, ok := tf.expect()
	if !ok {
		f.c.Obs(l, "step", "%q, but trial %d's script has no more processes", o.Step, tf.n)
		return
	}
	want := "run " + strconv.Itoa(len(tf.runs)+1)
	if a.Kind == ActResolveHeld {
		want = "resolve " + key.String()
	}
	if o.Step != want {
		f.c.Obs(l, "step", "is %q, but the script and the journal the parent read before it give %q", o.Step, want)
	}
	if tf.lines == 1 {
		tf.receiver, tf.db = o.Receiver, o.DB
	}
	if o.Receiver != tf.receiver || !strings.HasPrefix(o.Receiver, "http://127.0.0.1:") {
		f.c.Obs(l, "receiver", "%q, but trial %d's receiver is one loopback URL (%q)", o.Receiver, tf.n, tf.receiver)
	}
	if cf.journal && (o.DB != tf.db || filepath.Base(o.DB) != DBName) {
		f.c.Obs(l, "db", "%q, but the trial's runs share one file named %s (%q)", o.DB, DBName, tf.db)
	}
	if !cf.journal && o.DB != "" {
		f.c.Obs(l, "db", "%q, but condition %s keeps no journal", o.DB, cf.c.Name)
	}
	if cf.journal != (o.Journal != nil) {
		f.c.Obs(l, "journal", "present=%v, but condition %s keeps a journal=%v", o.Journal != nil, cf.c.Name, cf.journal)
	}
	p, pok := f.c.Use(f.rec, l, o.ProcessID)
	var w window
	if pok {
		if lbl := fmt.Sprintf("trial %d %s", tf.n, want); p.Label != lbl {
			f.c.Proc(p, "label", "is %q, want %q", p.Label, lbl)
		}
		w = f.window(p)
	}
	f.checkSends(cf, tf, l, o, w, pok)
	before := tf.rows
	if o.Journal != nil {
		f.checkRows(cf, tf, l, o, w, pok, a, key)
		tf.rows = o.Journal
	}
	if a.Kind == ActRun {
		f.runLine(cf, tf, l, o, a, p, pok, w, before)
	} else {
		f.resolveLine(cf, tf, l, o, key, p, pok)
		tf.pending = tf.pending[1:]
	}
}

func (f *folder) window(p results.Process) window {
	s, err1 := time.Parse(time.RFC3339Nano, p.StartedAt)
	e, err2 := time.Parse(time.RFC3339Nano, p.EndedAt)
	if err1 != nil || err2 != nil || e.Before(s) {
		f.c.Proc(p, "started_at", "%q to %q is not a process window", p.StartedAt, p.EndedAt)
	}
	// duration_ms is monotonic, the window wall-clock; they agree closely.
	if d := float64(e.Sub(s).Microseconds()) / 1000; math.Abs(d-p.DurationMS) > 2 {
		f.c.Proc(p, "duration_ms", "is %v, but started_at to ended_at is %v ms", p.DurationMS, d)
	}
	return window{s, e}
}

// itemBody is the body a run gives item id: changed for the failing item
// when the run changes it.
func (f *folder) itemDigest(item string, changed bool) (string, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(item, "item-"))
	if err != nil || n < 1 || n > f.st.Items || wb.ItemID(n) != item {
		return "", false
	}
	body := wb.ItemBody(n)
	if changed && n == f.st.FailAt {
		body = wb.ChangedBody(n)
	}
	return wb.Digest(wb.Item{ID: item, Body: body}), true
}

// checkSends checks the receiver's log entries since the previous line:
// numbered on from the last, sent while this process ran, by this
// process's job, and answered as the receiver's rules answer.
func (f *folder) checkSends(cf *condFold, tf *trialFold, l results.Line, o Observation, w window, pok bool) {
	for i, e := range o.Sends {
		fld := results.Field("sends", i)
		tf.seq++
		if e.Seq != tf.seq {
			f.c.Obs(l, fld+".seq", "is %d, want %d: the receiver numbers its log from 1 without gaps", e.Seq, tf.seq)
			tf.seq = e.Seq
		}
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			f.c.Obs(l, fld+".at", "%q is not a time", e.At)
		} else if pok && !w.holds(at) {
			f.c.Obs(l, fld+".at", "%s is outside process %d's window %s to %s; a send comes from the process running", e.At, o.ProcessID, w.start.Format(time.RFC3339Nano), w.end.Format(time.RFC3339Nano))
		}
		if e.Step != wb.StepNotify {
			f.c.Obs(l, fld+".step", "is %q; only %s sends", e.Step, wb.StepNotify)
		}
		k := wb.Key{Job: e.Job, Item: e.Item, Step: e.Step}
		digest, ok := f.itemDigest(e.Item, true)
		orig, _ := f.itemDigest(e.Item, false)
		if !ok || (e.Digest != digest && e.Digest != orig) {
			f.c.Obs(l, fld+".digest", "%q for %q is not the digest of any body the settings give it", e.Digest, e.Item)
		}
		inject := tf.armed && e.Item == wb.ItemID(f.st.FailAt)
		var want string
		switch {
		case inject && cf.c.Mode == BeforeAccept:
			want = receiver.SendRejected
		case e.IdempotencyKey != "" && tf.idem[e.IdempotencyKey] != "":
			want = receiver.SendReplayed
		case inject:
			want = receiver.SendAcceptedNoReply
		default:
			want = receiver.SendAccepted
		}
		if inject {
			tf.armed = false
		}
		if e.Outcome != want {
			f.c.Obs(l, fld+".outcome", "is %q, but the receiver's rules give %q for this send", e.Outcome, want)
		}
		wantRc := ""
		switch e.Outcome {
		case receiver.SendAccepted, receiver.SendAcceptedNoReply:
			wantRc = receiver.Receipt(e.Item, e.Digest)
			tf.accepts[k] = wantRc
			if e.IdempotencyKey != "" {
				tf.idem[e.IdempotencyKey] = wantRc
			}
		case receiver.SendReplayed:
			wantRc = tf.idem[e.IdempotencyKey]
		}
		if e.Receipt != wantRc {
			f.c.Obs(l, fld+".receipt", "is %q, want %q", e.Receipt, wantRc)
		}
		tf.sends = append(tf.sends, e)
	}
}

// checkRows checks the journal the parent read: rows in key order, each
// for an item and digest the settings give, and every row that changed
// since the previous read written while this process ran.
func (f *folder) checkRows(cf *condFold, tf *trialFold, l results.Line, o Observation, w window, pok bool, a Action, key wb.Key) {
	prev := map[wb.Key]JournalRow{}
	for _, r := range tf.rows {
		prev[r.Key()] = r
	}
	seen := map[wb.Key]bool{}
	for i, r := range o.Journal {
		fld := results.Field("journal", i)
		k := r.Key()
		if i > 0 && !keyLess(o.Journal[i-1].Key(), k) {
			f.c.Obs(l, fld, "%s is out of key order or repeated; the parent lists rows by job, item, step", k)
		}
		seen[k] = true
		if r.Job != f.st.JobID && r.Job != f.st.NewJobID {
			f.c.Obs(l, fld+".job_id", "%q is not a job id of the settings", r.Job)
		}
		if !validStep(r.Step) {
			f.c.Obs(l, fld+".step_name", "%q is not a step", r.Step)
		}
		switch wb.Status(r.Status) {
		case wb.InFlight, wb.Succeeded, wb.Failed:
		default:
			f.c.Obs(l, fld+".status", "%q is not IN_FLIGHT, SUCCEEDED or FAILED", r.Status)
		}
		orig, ok := f.itemDigest(r.Item, false)
		if !ok || r.Digest != orig {
			f.c.Obs(l, fld+".payload_digest", "is not the digest of %s's body; no run writes a row for a changed body the journal does not hold", r.Item)
		}
		if r.Status == string(wb.Succeeded) && wb.IsSideEffect(r.Step) {
			if rc, ok := tf.accepts[k]; !ok || rc != r.Receipt {
				f.c.Obs(l, fld+".receipt", "%q, but the receiver's log gives %s the receipt %q", r.Receipt, k, rc)
			}
		}
		if p, had := prev[k]; had && p == r {
			continue
		}
		if pok && !w.holds(unixTime(r.UpdatedAt)) {
			f.c.Obs(l, fld+".updated_at", "%s changed since the previous read, but its updated_at %s is outside process %d's window", k, unixTime(r.UpdatedAt).Format(time.RFC3339Nano), o.ProcessID)
		}
		if a.Kind == ActResolveHeld && k != key {
			f.c.Obs(l, fld, "%s changed during the resolve of %s", k, key)
		}
	}
	for k := range prev {
		if seen[k] {
			continue
		}
		if a.Kind != ActResolveHeld || k != key {
			f.c.Obs(l, "journal", "row %s is gone; only a resolve with delivered=false deletes a row, and only its own", k)
		}
	}
}

func keyLess(a, b wb.Key) bool {
	if a.Job != b.Job {
		return a.Job < b.Job
	}
	if a.Item != b.Item {
		return a.Item < b.Item
	}
	return a.Step < b.Step
}

func validStep(s string) bool {
	for _, x := range wb.Steps {
		if s == x {
			return true
		}
	}
	return false
}

func unixTime(sec float64) time.Time {
	return time.Unix(0, int64(sec*1e9))
}

func stepIndex(s string) int {
	for i, x := range wb.Steps {
		if s == x {
			return i
		}
	}
	return -1
}

func (f *folder) runLine(cf *condFold, tf *trialFold, l results.Line, o Observation, a Action, p results.Process, pok bool, w window, before []JournalRow) {
	r := RunObs{Run: len(tf.runs) + 1, JobID: a.Job, Mode: a.Mode}
	rt := RunTiming{Run: r.Run}
	if o.Lookup != nil {
		f.c.Obs(l, "lookup", "present on a run; only a resolve follows a lookup")
	}
	// What the parent saw: sends in this window, rows this process wrote.
	sent := len(o.Sends)
	written := map[string]int{}
	verified := 0
	prev := map[wb.Key]JournalRow{}
	for _, x := range before {
		prev[x.Key()] = x
	}
	sentKeys := map[wb.Key]bool{}
	for _, e := range o.Sends {
		sentKeys[wb.Key{Job: e.Job, Item: e.Item, Step: e.Step}] = true
		if e.Job != a.Job {
			f.c.Obs(l, "sends", "a send of job %q during a run of job %q", e.Job, a.Job)
		}
		if (e.IdempotencyKey != "") != a.IdempotencyKey || (e.IdempotencyKey != "" && e.IdempotencyKey != wb.Key{Job: e.Job, Item: e.Item, Step: e.Step}.String()) {
			f.c.Obs(l, "sends", "idempotency key %q, but this run sends %s", e.IdempotencyKey, map[bool]string{true: "job:item:step keys", false: "no key"}[a.IdempotencyKey])
		}
	}
	if cf.journal && a.Mode == wb.ModeJournal {
		for _, x := range o.Journal {
			old, had := prev[x.Key()]
			if had && old == x {
				continue
			}
			if had && old.Status != string(wb.Succeeded) && x.Status == string(wb.Succeeded) && wb.IsSideEffect(x.Step) && !sentKeys[x.Key()] && a.Verify {
				verified++
				continue
			}
			written[x.Step]++
		}
	}
	if !pok {
		tf.runs = append(tf.runs, r)
		return
	}
	f.c.Argv(p, wb.WorkerRun, RunArgs(f.st, a, o.DB, o.Receiver))
	env := map[string]string{}
	if a.CrashPoint != "" {
		env[protocol.EnvCrashAt] = a.CrashPoint
	}
	f.c.Env(p, env)
	r.ExitCode = p.ExitCode
	rt.ProcessMS = p.DurationMS
	switch p.ExitCode {
	case protocol.ExitACK, protocol.ExitCrash, protocol.ExitStepFailed:
	default:
		f.c.Proc(p, "exit_code", "%s %s; a run ends in 0, 17 (crash) or 18 (step failed)", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
	rep, ok := f.c.Report(p)
	floorExec := map[string]int{wb.StepNotify: sent}
	if p.ExitCode == protocol.ExitCrash {
		r.Status, r.CrashedAt = StatusCrashed, rep.CrashedAt
		if ok {
			f.checkPoints(p, rep.Points, o.Sends, rep.CrashedAt)
		}
		floorExec[wb.StepValidate], floorExec[wb.StepTransform] = written[wb.StepValidate], written[wb.StepTransform]
		rt.FloorMS = floorOf(f.st.LatencyMS, floorExec)
		tf.timings = append(tf.timings, rt)
		tf.runs = append(tf.runs, r)
		tf.lastHeld = nil
		return
	}
	var rr wb.RunResult
	if ok {
		if err := results.DecodeStrict(rep.Result, &rr); err != nil {
			f.c.Proc(p, "stdout", "the report's result is not a run result: %v", err)
			ok = false
		}
	}
	if !ok {
		tf.runs = append(tf.runs, r)
		return
	}
	f.checkPoints(p, rep.Points, o.Sends, "")
	if rr.Mode != a.Mode || rr.JobID != a.Job || rr.Items != f.st.Items {
		f.c.Proc(p, "stdout", "the worker says it ran %s of job %s over %d items; its command line gives %s, %s, %d", rr.Mode, rr.JobID, rr.Items, a.Mode, a.Job, f.st.Items)
	}
	if a.Mode == wb.ModeJournal {
		if rr.SQLite == nil || *rr.SQLite != f.st.SQLite {
			f.c.Proc(p, "stdout.result.sqlite", "the worker read back %s, the settings require %s", results.Compact(rr.SQLite), results.Compact(f.st.SQLite))
		}
	} else if rr.SQLite != nil {
		f.c.Proc(p, "stdout.result.sqlite", "%s, but a run without a journal opens no file", results.Compact(rr.SQLite))
	}
	// Executed steps: the parent's count wherever it has one.
	exec := map[string]int{}
	for _, step := range wb.Steps {
		exec[step] = rr.Executed[step]
	}
	for step := range rr.Executed {
		if stepIndex(step) < 0 {
			f.c.Proc(p, "stdout.result.executed_by_step", "names step %q", step)
		}
	}
	if exec[wb.StepNotify] != sent {
		f.c.Proc(p, "stdout.result.executed_by_step.notify_external", "the worker says %d, the receiver logged %d sends while it ran", exec[wb.StepNotify], sent)
	}
	exec[wb.StepNotify] = sent
	if a.Mode == wb.ModeJournal {
		for _, step := range wb.Steps {
			if rr.Executed[step] != written[step] {
				f.c.Proc(p, "stdout.result.executed_by_step."+step, "the worker says %d, but it wrote %d %s rows of the journal while it ran", rr.Executed[step], written[step], step)
			}
			exec[step] = written[step]
		}
	} else if exec[wb.StepValidate] != sent || exec[wb.StepTransform] != sent {
		// Without a journal every item runs its three steps in order and
		// only a send can stop the run, so each local step ran once per
		// send the receiver logged.
		f.c.Proc(p, "stdout.result.executed_by_step", "validate %d and transform %d, but a run without a journal runs each once per send, and the receiver logged %d", exec[wb.StepValidate], exec[wb.StepTransform], sent)
	}
	total := exec[wb.StepValidate] + exec[wb.StepTransform] + exec[wb.StepNotify]
	// The worker lists only the steps it ran, as the oracle does.
	for step, n := range exec {
		if n == 0 {
			delete(exec, step)
		}
	}
	if rr.ExecutedSteps != total {
		f.c.Proc(p, "stdout.result.executed_steps", "is %d, but the steps executed add up to %d", rr.ExecutedSteps, total)
	}
	r.ExecutedSteps, r.ExecutedByStep = total, exec
	r.Held, r.Failed, r.ErrorType = rr.Held, rr.Failed, rr.ErrorType
	if r.Held == nil {
		r.Held = []string{}
	}
	f.checkFailed(p, a, rr, o, r.ExitCode)
	f.checkHeld(p, a, rr, before, o)
	r.SkippedSteps = f.skipped(p, a, rr, before, verified)
	switch {
	case r.ExitCode == protocol.ExitStepFailed:
		r.Status = wb.StatusFailed
	case len(r.Held) > 0:
		r.Status = wb.StatusNeedsReview
	default:
		r.Status = wb.StatusCompleted
	}
	if rr.Status != r.Status {
		f.c.Proc(p, "stdout.result.status", "is %q, but exit code %d with %d held items gives %q", rr.Status, r.ExitCode, len(r.Held), r.Status)
	}
	rt.WorkerMS = &rr.MS
	rt.FloorMS = floorOf(f.st.LatencyMS, exec)
	if rr.MS < rt.FloorMS-1e-9 {
		f.c.Proc(p, "stdout.result.ms", "%v ms in the worker is below the %v ms the simulated latencies of its executed steps take", rr.MS, rt.FloorMS)
	}
	if rr.MS > p.DurationMS {
		f.c.Proc(p, "stdout.result.ms", "%v ms in the worker is longer than the process's %v ms", rr.MS, p.DurationMS)
	}
	tf.timings = append(tf.timings, rt)
	tf.runs = append(tf.runs, r)
	tf.lastHeld = r.Held
}

// checkPoints matches the crash points the worker passed with the sends
// the receiver logged: one before-send per send, in order, then an
// after-send-accepted for every send that got a receipt back.
func (f *folder) checkPoints(p results.Process, points []string, sends []receiver.Entry, crashedAt string) {
	var want []string
	for _, e := range sends {
		want = append(want, wb.ItemPoint(wb.PointBeforeSend, e.Item))
		if e.Outcome == receiver.SendAccepted || e.Outcome == receiver.SendReplayed {
			want = append(want, wb.ItemPoint(wb.PointAfterSendAccepted, e.Item))
		}
	}
	if crashedAt != "" && (len(want) == 0 || want[len(want)-1] != crashedAt) {
		want = append(want, crashedAt)
	}
	if strings.Join(points, " ") != strings.Join(want, " ") {
		f.c.Proc(p, "stdout.points", "%s, but the receiver's log implies %s", results.CompactN(points, 160), results.CompactN(want, 160))
	}
}

// checkFailed checks a step failure against the receiver's log and the
// journal: only a send fails, and it is the last one the log holds.
func (f *folder) checkFailed(p results.Process, a Action, rr wb.RunResult, o Observation, exit int) {
	if (exit == protocol.ExitStepFailed) != (rr.Failed != "") {
		f.c.Proc(p, "stdout.result.failed", "%q with exit code %d; a failed step exits 18 and names the step", rr.Failed, exit)
		return
	}
	if rr.Failed == "" {
		if rr.ErrorType != "" {
			f.c.Proc(p, "stdout.result.error_type", "%q without a failed step", rr.ErrorType)
		}
		return
	}
	var last receiver.Entry
	if n := len(o.Sends); n > 0 {
		last = o.Sends[n-1]
	}
	wantType := map[string]string{receiver.SendRejected: "ReceiverUnavailable", receiver.SendAcceptedNoReply: "NoReply"}[last.Outcome]
	if rr.Failed != last.Item+":"+last.Step || rr.ErrorType != wantType || wantType == "" {
		f.c.Proc(p, "stdout.result.failed", "%s %s, but the receiver's last send in the window is %s:%s %s", rr.Failed, rr.ErrorType, last.Item, last.Step, last.Outcome)
	}
	if a.Mode != wb.ModeJournal {
		return
	}
	k := wb.Key{Job: a.Job, Item: last.Item, Step: last.Step}
	for _, r := range o.Journal {
		if r.Key() == k && (r.Status != string(wb.Failed) || r.ErrorType != rr.ErrorType) {
			f.c.Proc(p, "stdout.result.error_type", "%q, but the journal row %s is %s with error_type %q", rr.ErrorType, k, r.Status, r.ErrorType)
		}
	}
}

// checkHeld checks the held list against the journal before and after the
// run: an unknown send is a side-effect row left unfinished that the run
// neither sent again nor changed, and an input change is a row whose digest
// differs from the run's body; and every such row is held.
func (f *folder) checkHeld(p results.Process, a Action, rr wb.RunResult, before []JournalRow, o Observation) {
	if a.Mode != wb.ModeJournal {
		if len(rr.Held) > 0 || rr.SkippedSteps != 0 {
			f.c.Proc(p, "stdout.result.held", "%v with %d skipped, but a run without a journal holds and skips nothing", rr.Held, rr.SkippedSteps)
		}
		return
	}
	after := map[wb.Key]JournalRow{}
	for _, r := range o.Journal {
		after[r.Key()] = r
	}
	byItem := map[string]map[string]JournalRow{}
	for _, r := range before {
		if r.Job != a.Job {
			continue
		}
		if byItem[r.Item] == nil {
			byItem[r.Item] = map[string]JournalRow{}
		}
		byItem[r.Item][r.Step] = r
	}
	var want []string
	for item, rows := range byItem {
		d, _ := f.itemDigest(item, a.ChangeItem)
		// The worker walks the steps in order: a row for another body
		// holds the item, a finished or local step goes on, and an
		// unfinished send it cannot confirm holds it.
		for _, step := range wb.Steps {
			x, ok := rows[step]
			if !ok {
				continue
			}
			if x.Digest != d {
				want = append(want, item+":"+step+":"+wb.HeldInputChanged)
				break
			}
			if x.Status == string(wb.Succeeded) || !wb.IsSideEffect(step) {
				continue
			}
			if after[x.Key()] == x {
				want = append(want, item+":"+step+":"+wb.HeldUnknown)
			}
			break
		}
	}
	sort.Strings(want)
	got := append([]string{}, rr.Held...)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.c.Proc(p, "stdout.result.held", "%v, but the journal before and after the run gives %v", rr.Held, want)
	}
}

// skipped counts the steps the run found SUCCEEDED for its own body, up
// to where it stopped, plus the sends it verified; the worker's count is
// checked against it.
func (f *folder) skipped(p results.Process, a Action, rr wb.RunResult, before []JournalRow, verified int) int {
	if a.Mode != wb.ModeJournal {
		return rr.SkippedSteps
	}
	stop := f.st.Items*len(wb.Steps) + 1
	if rr.Failed != "" {
		item, step, _ := strings.Cut(rr.Failed, ":")
		if n, err := strconv.Atoi(strings.TrimPrefix(item, "item-")); err == nil {
			stop = (n-1)*len(wb.Steps) + stepIndex(step)
		}
	}
	held := map[string]int{}
	for _, h := range rr.Held {
		parts := strings.Split(h, ":")
		if len(parts) == 3 {
			held[parts[0]] = stepIndex(parts[1])
		}
	}
	n := verified
	for _, r := range before {
		pos := stepIndex(r.Step)
		num, err := strconv.Atoi(strings.TrimPrefix(r.Item, "item-"))
		if r.Job != a.Job || r.Status != string(wb.Succeeded) || err != nil || pos < 0 {
			continue
		}
		if (num-1)*len(wb.Steps)+pos >= stop {
			continue
		}
		if h, ok := held[r.Item]; ok && pos >= h {
			continue
		}
		if d, _ := f.itemDigest(r.Item, a.ChangeItem); d != r.Digest {
			continue
		}
		n++
	}
	if rr.SkippedSteps != n {
		f.c.Proc(p, "stdout.result.skipped_steps", "the worker says %d, but the journal before the run held %d SUCCEEDED steps it reached, and it verified %d", rr.SkippedSteps, n-verified, verified)
	}
	return n
}

func (f *folder) resolveLine(cf *condFold, tf *trialFold, l results.Line, o Observation, k wb.Key, p results.Process, pok bool) {
	if len(o.Sends) > 0 {
		f.c.Obs(l, "sends", "%d sends while resolve %s ran; resolve sends nothing", len(o.Sends), k)
	}
	if o.Lookup == nil {
		f.c.Obs(l, "lookup", "missing; every resolve follows the parent's lookup at the receiver")
		return
	}
	lk := *o.Lookup
	if lk.Key != k.String() {
		f.c.Obs(l, "lookup.key", "is %q, want %q", lk.Key, k)
	}
	rc, found := tf.accepts[k]
	if lk.Found != found || lk.Receipt != rc {
		f.c.Obs(l, "lookup", "found=%v receipt %q, but the receiver's log up to here gives found=%v receipt %q", lk.Found, lk.Receipt, found, rc)
	}
	held := false
	for _, h := range tf.lastHeld {
		held = held || h == k.Item+":"+k.Step+":"+wb.HeldUnknown
	}
	if !held {
		f.c.Obs(l, "step", "resolves %s, which the previous run did not report as held unknown (%v)", k, tf.lastHeld)
	}
	for i, r := range o.Journal {
		if r.Key() != k {
			continue
		}
		if !lk.Found || r.Status != string(wb.Succeeded) || r.Receipt != lk.Receipt {
			f.c.Obs(l, results.Field("journal", i), "%s is %s receipt %q after resolve with delivered=%v receipt %q", k, r.Status, r.Receipt, lk.Found, lk.Receipt)
		}
	}
	tf.resolved = append(tf.resolved, ResolveObs{Key: k.String(), Delivered: lk.Found, Receipt: lk.Receipt})
	if !pok {
		return
	}
	f.c.Argv(p, wb.WorkerResolve, ResolveArgs(o.DB, k, lk.Found, lk.Receipt))
	f.c.Env(p, nil)
	if p.ExitCode != protocol.ExitACK {
		f.c.Proc(p, "exit_code", "%s %s, but a resolve that the run went on from exits 0", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
	if rep, ok := f.c.Report(p); ok {
		var rr wb.ResolveResult
		if err := results.DecodeStrict(rep.Result, &rr); err != nil {
			f.c.Proc(p, "stdout", "the report's result is not a resolve result: %v", err)
		} else if rr != (wb.ResolveResult{Key: k.String(), Delivered: lk.Found, Receipt: lk.Receipt}) {
			f.c.Proc(p, "stdout.result", "%s, but the parent passed %s delivered=%v receipt %q", results.Compact(rr), k, lk.Found, lk.Receipt)
		}
	}
}

// outcome is the trial's observed figures.
func (tf *trialFold) outcome(cf *condFold) Outcome {
	o := Outcome{Runs: tf.runs, Resolved: tf.resolved, JournalRows: map[string]int{}}
	if o.Runs == nil {
		o.Runs = []RunObs{}
	}
	if o.Resolved == nil {
		o.Resolved = []ResolveObs{}
	}
	if n := len(tf.runs); n > 0 {
		o.Steps = tf.runs[n-1].ExecutedSteps
	}
	o.Accepts, o.Duplicates, o.SentOnceItems = AcceptFigures(tf.sends)
	if cf.journal {
		for _, r := range tf.rows {
			o.JournalRows[r.Status]++
		}
	}
	return o
}

// AcceptFigures counts the receiver's log: accepts, duplicates (accepts
// of one (item, step) beyond the first, across job ids, since a new job id
// does not make a second notification any less of a duplicate for whoever
// receives it) and the (item, step) pairs accepted exactly once.
func AcceptFigures(log []receiver.Entry) (accepts, duplicates, once int) {
	by := map[[2]string]int{}
	for _, e := range log {
		if e.Accepted() {
			by[[2]string{e.Item, e.Step}]++
			accepts++
		}
	}
	for _, n := range by {
		duplicates += n - 1
		if n == 1 {
			once++
		}
	}
	return accepts, duplicates, once
}
