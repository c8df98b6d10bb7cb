package batch

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	"idemlab/worker/store"
	"idemlab/worker/wire"
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
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{st: st, rec: rec, conds: map[string]*condFold{}}
	for _, c := range st.Conditions {
		f.conds[c.Name] = &condFold{c: c, p: st.Params(c), journal: UsesJournal(st.Params(c))}
	}
	dbs := engine.Places{}
	// A first pass indexes each trial's sends by sender, so that every
	// run's sends are the ones its token names, whichever line holds them.
	var lines []*line
	engine.Each(&f.c, rec, "a batch observation", f.conds, func(l results.Line, o Observation, cf *condFold) {
		tf := cf.trialFor(f, l, o.Trial)
		if tf == nil {
			return
		}
		if tf.read == 0 && o.DB != "" {
			if other, dup := dbs.Take(l.Shard, o.DB, fmt.Sprintf("%s trial %d", o.Condition, o.Trial)); dup {
				f.c.Obs(l, "db", "%s is also %s's file; every trial starts on a fresh journal", o.DB, other)
			}
		}
		tf.read++
		tf.tokens = tf.tokens || o.Sender != ""
		for _, e := range o.Sends {
			tf.bySender[e.Sender] = append(tf.bySender[e.Sender], e)
		}
		lines = append(lines, &line{l: l, o: o, cf: cf, tf: tf})
	})
	for _, ln := range lines {
		f.line(ln)
	}
	folded := f.folded()
	f.c.Unused(rec, 1)
	return folded, f.c.Findings
}

// folded gathers each condition's trials into its observed outcomes and
// the timing table.
func (f *folder) folded() scenario.Folded {
	folded := scenario.Folded{Observed: map[string]any{}}
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
			tt := tf.timing(c)
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
	ex.Wall = wall(f.st, f.rec, wallFloor)
	ex.PostgresReadBack = f.pgRB
	ex.LateSends = f.late
	if len(folded.Observed) > 0 {
		folded.Extra = ex
	}
	return folded
}

type folder struct {
	st    Settings
	rec   results.Records
	c     results.Checker
	conds map[string]*condFold
	// pgRB is what the first journal run's PostgreSQL session read back.
	pgRB *store.PGSettings
	// late are the sends logged after the parent saw their sender end.
	late []receiver.LateSend
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
	pending  []wire.Key
	resolveJ string
	lines    int
	receiver string
	db       string
	seq      int
	armed    bool
	idem     map[string]string
	accepts  map[wire.Key]string
	sends    []receiver.Entry
	rows     []wb.JournalRow
	runs     []RunObs
	resolved []ResolveObs
	timings  []RunTiming
	lastHeld []string
	// read counts the trial's lines in the first pass; tokens says they
	// name their runs' senders (format 5), bySender holds the trial's
	// sends by sender and started the runs folded so far by token.
	read     int
	tokens   bool
	bySender map[string][]receiver.Entry
	started  map[string]startedRun
}

// startedRun is a run a later send may name: its step, window and signal.
type startedRun struct {
	step   string
	w      window
	signal string
}

// line is one observation line as the fold reads it: the record, the
// trial it belongs to, the process it names, and what the trial's script
// says it must be.
type line struct {
	l  results.Line
	o  Observation
	cf *condFold
	tf *trialFold
	// a is the script's action; for a resolve, key is the send it
	// resolves.
	a   Action
	key wire.Key
	// want is the step the line must name.
	want string
	// p is the process the line names, when pok; w is its window.
	p   results.Process
	pok bool
	w   window
	// before is the journal the parent read before this process.
	before []wb.JournalRow
	// sent are the process's own sends: those its sender token names,
	// over the trial's whole log; in a folder of format 4, without
	// tokens, the sends logged while it ran.
	sent []receiver.Entry
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
		cf.trials[n-1] = &trialFold{n: n, script: Script(cf.p), armed: Injects(cf.p), idem: map[string]string{}, accepts: map[wire.Key]string{}, rows: []wb.JournalRow{},
			bySender: map[string][]receiver.Entry{}, started: map[string]startedRun{}}
	}
	return cf.trials[n-1]
}

func (tf *trialFold) done() bool {
	return len(tf.pending) == 0 && tf.next == len(tf.script)
}

// expect advances the script to the process the next line must be: a run,
// or a resolve of the next send the parent's last journal read left
// unfinished.
func (tf *trialFold) expect() (a Action, k wire.Key, ok bool) {
	for {
		if len(tf.pending) > 0 {
			return Action{Kind: ActResolveHeld, Job: tf.resolveJ}, tf.pending[0], true
		}
		if tf.next >= len(tf.script) {
			return Action{}, wire.Key{}, false
		}
		a = tf.script[tf.next]
		tf.next++
		if a.Kind == ActRun {
			return a, wire.Key{}, true
		}
		tf.pending, tf.resolveJ = wb.HeldSends(tf.rows, a.Job), a.Job
	}
}

// window is a process's start and end as the parent recorded them.
type window struct{ start, end time.Time }

func (w window) holds(t time.Time) bool {
	return !t.Before(w.start.Add(-clockSlack)) && !t.After(w.end.Add(clockSlack))
}

// line folds one observation: where it belongs, its process, the sends
// and rows it records, then the run or resolve it is.
func (f *folder) line(ln *line) {
	tf := ln.tf
	tf.lines++
	var ok bool
	ln.a, ln.key, ok = tf.expect()
	if !ok {
		f.c.Obs(ln.l, "step", "%q, but trial %d's script has no more processes", ln.o.Step, tf.n)
		return
	}
	f.checkPlace(ln)
	ln.p, ln.pok = f.c.Use(f.rec, ln.l, ln.o.ProcessID)
	if ln.pok {
		if lbl := fmt.Sprintf("trial %d %s", tf.n, ln.want); ln.p.Label != lbl {
			f.c.Proc(ln.p, "label", "is %q, want %q", ln.p.Label, lbl)
		}
		ln.w = f.window(ln.p)
	}
	f.senderOf(ln)
	f.checkSends(ln)
	ln.before = tf.rows
	if ln.o.Journal != nil {
		f.checkRows(ln)
		tf.rows = ln.o.Journal
	}
	if ln.a.Kind == ActRun {
		f.runLine(ln)
	} else {
		f.resolveLine(ln)
		tf.pending = tf.pending[1:]
	}
}

// checkPlace checks that the line names the step the script gives next,
// the trial's one receiver and its one journal file, and carries the
// journal exactly when the condition keeps one.
func (f *folder) checkPlace(ln *line) {
	tf, cf, o, l := ln.tf, ln.cf, ln.o, ln.l
	ln.want = "run " + strconv.Itoa(len(tf.runs)+1)
	if ln.a.Kind == ActResolveHeld {
		ln.want = "resolve " + ln.key.String()
	}
	if o.Step != ln.want {
		f.c.Obs(l, "step", "is %q, but the script and the journal the parent read before it give %q", o.Step, ln.want)
	}
	if tf.lines == 1 {
		tf.receiver, tf.db = o.Receiver, o.DB
	}
	if o.Receiver != tf.receiver || !strings.HasPrefix(o.Receiver, "http://127.0.0.1:") {
		f.c.Obs(l, "receiver", "%q, but trial %d's receiver is one loopback URL (%q)", o.Receiver, tf.n, tf.receiver)
	}
	if cf.journal && (o.DB != tf.db || !backend.IsTarget(f.st.backendName(), o.DB, DBName)) {
		f.c.Obs(l, "db", "%q, but the trial's runs share one %s (%q)", o.DB, backend.TargetKind(f.st.backendName(), DBName), tf.db)
	}
	if !cf.journal && o.DB != "" {
		f.c.Obs(l, "db", "%q, but condition %s keeps no journal", o.DB, cf.c.Name)
	}
	if cf.journal != (o.Journal != nil) {
		f.c.Obs(l, "journal", "present=%v, but condition %s keeps a journal=%v", o.Journal != nil, cf.c.Name, cf.journal)
	}
	if !tf.tokens {
		return
	}
	want := ""
	if ln.a.Kind == ActRun {
		want = RunSender(len(tf.runs) + 1)
	}
	if o.Sender != want {
		f.c.Obs(l, "sender", "is %q, want %q: the parent gives a trial's n-th run the token p<n>, and a resolve none", o.Sender, want)
	}
}

// senderOf finds the line's own sends and, for a run, records it as a
// sender later sends may name.
func (f *folder) senderOf(ln *line) {
	tf, o := ln.tf, ln.o
	if !tf.tokens {
		ln.sent = o.Sends
		return
	}
	if o.Sender == "" {
		return
	}
	ln.sent = tf.bySender[o.Sender]
	if _, dup := tf.started[o.Sender]; !dup {
		tf.started[o.Sender] = startedRun{step: o.Step, w: ln.w, signal: ln.p.Signal}
	}
}

// window is a process's window; scenario.Evaluate checks every
// scenario's process windows (results.Windows).
func (f *folder) window(p results.Process) window {
	s, e, _ := results.Window(p)
	return window{s, e}
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
