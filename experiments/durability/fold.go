package durability

import (
	"path/filepath"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
)

// trialLine is one line of observations.jsonl with the condition it
// names: the one value the fold's checks of a trial take.
type trialLine struct {
	l    results.Line
	o    Observation
	cond Condition
}

// conditionFold is what the fold has gathered of one condition so far.
type conditionFold struct {
	points []string // discovered by the normal run
	trials int
	out    map[string]Trial
}

// folder carries one fold: the settings, the records, the findings so far
// and each condition's trials.
type folder struct {
	c   results.Checker
	st  Settings
	rec results.Records
	per map[string]*conditionFold
	// dirs maps each trial's folder to the line that used it.
	dirs map[string]int
}

// Fold derives every trial's outcome from the records, checking each
// process line against the settings and the trial it belongs to.
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{st: st, rec: rec, per: map[string]*conditionFold{}, dirs: map[string]int{}}
	conds := map[string]Condition{}
	for _, cond := range st.Conditions {
		conds[cond.Name] = cond
	}
	for _, l := range rec.Observations {
		var o Observation
		if err := results.DecodeStrict(l.Raw, &o); err != nil {
			f.c.Obs(l, "", "not a durability observation: %v", err)
			continue
		}
		cond, ok := conds[o.Condition]
		if !ok {
			f.c.Obs(l, "condition", "%q is not a condition in the settings", o.Condition)
			continue
		}
		f.trial(trialLine{l: l, o: o, cond: cond})
	}
	folded := scenario.Folded{Observed: map[string]any{}}
	for _, cond := range st.Conditions {
		s := f.per[cond.Name]
		if s == nil {
			continue
		}
		if s.trials != len(s.points)+1 {
			f.c.Add("observations.jsonl", "condition "+cond.Name, "%d trials recorded, but the normal run reported %d points (and itself)", s.trials, len(s.points))
		}
		folded.Observed[cond.Name] = s.out
	}
	f.c.Unused(rec, 1)
	folded.Extra = Extra{Matrix: BuildMatrix(st, folded.Observed)}
	return folded, f.c.Findings
}

// trial folds one trial: its place among its condition's trials, its
// shape, each of its processes, and then its outcome.
func (f *folder) trial(t trialLine) {
	s := f.per[t.o.Condition]
	if s == nil {
		s = &conditionFold{out: map[string]Trial{}}
		f.per[t.o.Condition] = s
	}
	f.checkOrder(t, s)
	f.checkShape(t)
	facts, claims := f.processes(t, s)
	if t.cond.Pattern == PatternClaim {
		f.checkClaim(t, claims, &facts)
	}
	out, n := Classify(facts)
	tr := Trial{Outcome: out, FirstExit: facts.FirstExit, RowsLost: n, Integrity: strings.Join(t.o.Integrity, "; ")}
	if t.o.Recovery != nil {
		for _, fr := range t.o.Recovery.Files {
			if fr.Changed {
				tr.Recovered = append(tr.Recovered, fr.Name+":"+fr.Action)
			}
		}
	}
	s.out[t.o.Point] = tr
}

// checkOrder checks the trial's place: the normal run comes first and
// names the points, the crash trials follow them in order, each once, and
// each on a fresh folder with the pattern's file.
func (f *folder) checkOrder(t trialLine, s *conditionFold) {
	switch {
	case s.trials == 0 && t.o.Point != PointACK:
		f.c.Obs(t.l, "point", "%q, but a condition's first trial is the normal run (%q) that discovers the points", t.o.Point, PointACK)
	case s.trials > 0 && (s.trials > len(s.points) || t.o.Point != s.points[s.trials-1]):
		f.c.Obs(t.l, "point", "%q, but the normal run reported the points %q, tried in that order", t.o.Point, s.points)
	}
	s.trials++
	if _, dup := s.out[t.o.Point]; dup {
		f.c.Obs(t.l, "point", "%q was already tried in this condition", t.o.Point)
	}
	wantDB := DBName(t.cond.Pattern)
	if filepath.Base(t.o.DB) != wantDB {
		f.c.Obs(t.l, "db", "%q, but the pattern's file is named %s", t.o.DB, wantDB)
	}
	dir := filepath.Dir(t.o.DB)
	if prev, dup := f.dirs[dir]; dup {
		f.c.Obs(t.l, "db", "folder %s is also line %d's; every trial starts on a fresh folder", dir, prev)
	}
	f.dirs[dir] = t.l.N
}

// processes checks each process of the trial against what the run starts
// for its step, and gathers the facts the classifier takes from them.
func (f *folder) processes(t trialLine, s *conditionFold) (Facts, []claimStep) {
	facts := Facts{Pattern: t.cond.Pattern, EventID: f.st.EventID, JobID: f.st.JobID, Items: f.st.Items,
		Before: t.o.Before, After: t.o.After, Final: t.o.Final, Integrity: t.o.Integrity, Sends: t.o.Sends, FirstExit: -1}
	var claims []claimStep
	for i, step := range t.o.Steps {
		p, ok := f.c.Use(f.rec, t.l, step.ProcessID)
		if !ok {
			continue
		}
		env := Env(t.cond)
		if i == 0 {
			env = FirstEnv(t.cond, t.o.Point)
		}
		worker, args := ProcessArgs(f.st, t.cond, t.o, step)
		f.c.Argv(p, worker, args)
		f.c.Env(p, env)
		rep, ok := f.c.Report(p)
		if t.cond.Pattern == PatternClaim {
			claims = append(claims, claimStep{role: step.Role, p: p, rep: rep, ok: ok})
		}
		if i == 0 {
			facts.FirstExit = p.ExitCode
			f.first(t, s, p, rep, ok)
			continue
		}
		facts.LaterExits = append(facts.LaterExits, p.ExitCode)
		if p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitWorkerError || p.Signal != "" {
			f.c.Proc(p, "exit_code", "%d (signal %q) is not an outcome of a process after the cut (0, or 3 for a worker error)", p.ExitCode, p.Signal)
		}
	}
	return facts, claims
}

// first checks the trial's first process: it exits 0 on the normal run
// and 17 at a crash point, with the condition's crash kind; the normal
// run's report names the condition's points and the settings it read.
func (f *folder) first(t trialLine, s *conditionFold, p results.Process, rep protocol.Report, reported bool) {
	if p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitCrash || p.Signal != "" {
		f.c.Proc(p, "exit_code", "%d (signal %q) is not an outcome of the first process (0 or 17)", p.ExitCode, p.Signal)
	}
	if (t.o.Point == PointACK) != (p.ExitCode == protocol.ExitACK) {
		f.c.Proc(p, "exit_code", "%d, but the trial's point is %q (the normal run exits 0, a crash 17)", p.ExitCode, t.o.Point)
	}
	if !reported {
		return
	}
	if p.ExitCode == protocol.ExitCrash && rep.CrashKind != t.cond.Kind {
		f.c.Proc(p, "stdout", "the report's crash_kind is %q, the condition's %q", rep.CrashKind, t.cond.Kind)
	}
	if t.o.Point == PointACK {
		s.points = rep.Points
		f.checkReadBack(t, p, rep)
	}
}
