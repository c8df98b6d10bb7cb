package durability

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/experiments/syncmodel"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
)

// trialLine is one line of observations.jsonl with the condition it
// names: the one value the fold's checks of a trial take.
type trialLine struct {
	l    results.Line
	o    Observation
	cond Condition
}

// conditionFold is what the fold has gathered of one condition so far:
// each shard's sequence of trials (one, in a folder of one run) and the
// trials' outcomes.
type conditionFold struct {
	seqs map[int]*sequence
	out  map[string]Trial
}

// sequence is one shard's trials of a condition.
type sequence struct {
	// all is the condition's trials in run order, as the shard's normal
	// run discovered them: its report's points, its log's syncs; order
	// is the part of them the shard runs, the normal run first.
	all    []TrialRef
	order  []TrialRef
	trials int
}

func (s *conditionFold) seq(l results.Line) *sequence {
	q := s.seqs[l.Shard]
	if q == nil {
		q = &sequence{}
		s.seqs[l.Shard] = q
	}
	return q
}

// folder carries one fold: the settings, the records, the findings so far
// and each condition's trials.
type folder struct {
	c   results.Checker
	st  Settings
	rec results.Records
	per map[string]*conditionFold
	// dirs are the trials' folders, each with the line that used it.
	dirs engine.Places
	// firstShard is the lowest shard of a merged folder's records, whose
	// normal runs stand for the plan's; ran are the plan's trials held.
	firstShard int
	ran        []shard.Ran
}

// Fold derives every trial's outcome from the records, checking each
// process line against the settings and the trial it belongs to.
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{st: st, rec: rec, per: map[string]*conditionFold{}, dirs: engine.Places{}}
	conds := map[string]Condition{}
	for _, cond := range st.Conditions {
		conds[cond.Name] = cond
	}
	f.firstShard = rec.FirstShard()
	engine.Each(&f.c, rec, "a durability observation", conds, func(l results.Line, o Observation, cond Condition) {
		f.trial(trialLine{l: l, o: o, cond: cond})
	})
	folded := scenario.Folded{Observed: map[string]any{}, Plan: []shard.Trial{}, Ran: f.ran}
	discovered := map[string][]string{}
	for _, cond := range st.Conditions {
		s := f.per[cond.Name]
		if s == nil {
			continue
		}
		for _, sh := range slices.Sorted(maps.Keys(s.seqs)) {
			if q := s.seqs[sh]; q.trials != len(q.order) {
				f.c.AddTo(cond.Name, "observations.jsonl", "condition "+cond.Name, "%d trials recorded%s, but the normal run's points, syncs and seeds make %d", q.trials, inShard(sh), len(q.order))
			}
		}
		if q, ok := s.seqs[f.firstShard]; ok && len(q.all) > 0 {
			for _, tr := range q.all {
				discovered[cond.Name] = append(discovered[cond.Name], st.TrialKey(cond, tr.Point, tr.Seed))
			}
			for _, tr := range q.all[1:] {
				folded.Plan = append(folded.Plan, st.trial(cond, tr).Listed())
			}
		}
		folded.Observed[cond.Name] = s.out
	}
	f.c.Unused(rec, 1)
	folded.Discovered = discovered
	folded.Extra = Extra{Matrix: BuildMatrix(st, folded.Observed)}
	return folded, f.c.Findings
}

func inShard(sh int) string {
	if sh == 0 {
		return ""
	}
	return fmt.Sprintf(" in shard %d", sh)
}

// trial folds one trial: its place among its condition's trials, its
// shape, each of its processes, and then its outcome.
func (f *folder) trial(t trialLine) {
	s := f.per[t.o.Condition]
	if s == nil {
		s = &conditionFold{seqs: map[int]*sequence{}, out: map[string]Trial{}}
		f.per[t.o.Condition] = s
	}
	key := f.checkOrder(t, s)
	f.checkShape(t)
	f.checkCut(t)
	facts, claims := f.processes(t, s)
	if t.o.PGPower != nil {
		facts.Integrity = append(slices.Clone(facts.Integrity), t.o.PGPower.Damage()...)
	}
	f.checkSends(t, facts)
	if t.cond.Pattern == PatternClaim {
		f.checkClaim(t, claims, &facts)
	}
	out, n := Classify(facts)
	tr := Trial{Outcome: out, FirstExit: facts.FirstExit, RowsLost: n, Integrity: strings.Join(facts.Integrity, "; ")}
	if t.cond.OnServer() {
		tr.Lost = StableRows(LostRows(t.o.Before, t.o.After)).Lines()
	}
	if t.o.Recovery != nil {
		for _, fr := range t.o.Recovery.Files {
			if fr.Changed {
				tr.Recovered = append(tr.Recovered, fr.Name+":"+fr.Action)
			}
		}
		if f.st.Torn() {
			tr.Views = syncmodel.KeyOf(DBName(t.cond.Pattern), t.o.Recovery.Torn)
		}
	}
	if t.o.FS != nil {
		rec, err := powerlayer.Recovered(DBName(t.cond.Pattern), t.o.FS.Outcome, t.o.FS.Log)
		if err != nil {
			f.c.Obs(t.l, "fs.log", "%v", err)
		}
		tr.Recovered = rec
	}
	// Every shard runs the normal run; the first shard's stands for the
	// plan's, the others' are checked as any trial.
	discovery := f.discovery(t, s)
	if !discovery || t.l.Shard == f.firstShard {
		s.out[key] = tr
	}
	if !discovery {
		f.ran = append(f.ran, f.st.trial(t.cond, TrialRef{Point: t.o.Point, Seed: seedOf(t.o)}).Ran(t.l.Shard))
	}
}

// discovery says whether line t is its shard's normal run with the first
// seed: the run that discovers the points, which every shard makes.
func (f *folder) discovery(t trialLine, s *conditionFold) bool {
	return s.seq(t.l).trials == 1 && t.o.Point == PointACK && seedOf(t.o) == 0
}

// seedOf is the trial's seed index, 0 when it has none.
func seedOf(o Observation) int {
	if o.Seed == nil {
		return 0
	}
	return *o.Seed
}

// checkOrder checks the trial's place: the normal run with the first seed
// comes first and discovers the rest, which follow in Settings.Order, each
// once, each on a fresh folder with the pattern's file. It returns the
// trial's key.
func (f *folder) checkOrder(t trialLine, s *conditionFold) string {
	if torn := f.st.Torn() && t.cond.Kind == KindPower; torn != (t.o.Seed != nil) {
		f.c.Obs(t.l, "seed_index", "present=%v, but a trial carries a seed index exactly under the torn fault mode's power cuts", t.o.Seed != nil)
	} else if t.o.Seed != nil && (*t.o.Seed < 0 || *t.o.Seed >= f.st.FaultSeeds) {
		f.c.Obs(t.l, "seed_index", "%d, but the settings run %d seeds", *t.o.Seed, f.st.FaultSeeds)
	}
	key := f.st.TrialKey(t.cond, t.o.Point, seedOf(t.o))
	at := TrialRef{Point: t.o.Point, Seed: seedOf(t.o)}
	q := s.seq(t.l)
	switch {
	case q.trials == 0 && at != TrialRef{Point: PointACK}:
		f.c.Obs(t.l, "point", "%q, but a condition's first trial is the normal run (%q) that discovers the points", key, PointACK)
	case q.trials > 0 && (q.trials >= len(q.order) || at != q.order[q.trials]):
		f.c.Obs(t.l, "point", "%q, but the normal run's points, syncs and seeds give %v, of which this run tries %v in that order", key, q.all, q.order)
	}
	q.trials++
	// Each shard's normal run is a run of the same trial; only the first
	// shard's counts.
	if _, dup := s.out[key]; dup && (!f.discovery(t, s) || t.l.Shard == f.firstShard) {
		f.c.Obs(t.l, "point", "%q was already tried in this condition", key)
	}
	wantDB := DBName(t.cond.Pattern)
	switch {
	case t.cond.OnServer() && !backend.IsTarget(store.BackendPostgres, t.o.DB, ""):
		f.c.Obs(t.l, "db", "%q, but a PostgreSQL trial's database is a %s", t.o.DB, backend.TargetKind(store.BackendPostgres, ""))
	case !t.cond.OnServer() && filepath.Base(t.o.DB) != wantDB:
		f.c.Obs(t.l, "db", "%q, but the pattern's file is named %s", t.o.DB, wantDB)
	}
	// On PostgreSQL a trial's schema stands for its folder.
	dir := filepath.Dir(t.o.DB)
	if t.cond.OnServer() {
		dir = t.o.DB
	}
	if prev, dup := f.dirs.Take(t.l.Shard, dir, strconv.Itoa(t.l.N)); dup {
		f.c.Obs(t.l, "db", "folder %d:%s is also line %s's; every trial starts on a fresh folder", t.l.Shard, dir, prev)
	}
	return key
}

// checkCut replays the cut from the trial's op log (AuditCut) and checks
// the log against the trial's point: a cut inside sync N leaves N-1 syncs
// logged before the fsync, N after it.
func (f *folder) checkCut(t trialLine) {
	if t.cond.OnServer() {
		f.checkServer(t)
		f.checkPGSync(t)
		return
	}
	if t.o.Log == nil {
		f.c.Obs(t.l, "log", "missing; every trial keeps the VFS's op log")
		return
	}
	if cut, ok := f.st.fsSyncCut(t.cond, t.o.Point); ok {
		f.checkFSSyncCut(t, cut)
	} else if cut, ok := ParseSyncPoint(t.o.Point); ok {
		want := cut.N - 1
		if cut.After {
			want = cut.N
		}
		if got := faultvfs.Syncs(t.o.Log); got != want {
			f.c.Obs(t.l, "log", "holds %d syncs, but a cut at %s leaves %d", got, t.o.Point, want)
		}
	}
	if t.o.Recovery == nil {
		return
	}
	for _, p := range powerlayer.AuditCut(t.o.Log, *t.o.Recovery, f.st.FaultOptions(seedOf(t.o))) {
		f.c.Obs(t.l, p.Field, "%s", p.Text)
	}
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
			env = f.st.firstEnv(t.cond, t.o.Point)
		}
		worker, args := ProcessArgs(f.st, t.cond, t.o, step)
		f.c.Argv(p, worker, args)
		f.c.Env(p, env)
		// A first process the mount froze at a sync is killed: no report.
		_, frozen := f.st.mountSyncCut(t.cond, t.o.Point)
		frozen = frozen && i == 0
		var rep protocol.Report
		ok = false
		if !frozen {
			rep, ok = f.c.Report(p)
		}
		if ok && t.cond.OnServer() {
			f.checkDeliveryClaim(t, i, p, rep)
		}
		if t.cond.Pattern == PatternClaim {
			claims = append(claims, claimStep{role: step.Role, p: p, rep: rep, ok: ok})
		}
		if frozen {
			facts.FirstExit = p.ExitCode
			if p.KilledBy != "harness" || p.Signal != syscall.SIGKILL.String() {
				f.c.Proc(p, "exit_code", "%s, killed by %q; at a cut at the mount's sync the harness kills the first process the mount froze", protocol.Ending(p.ExitCode, p.Signal, p.Stderr), p.KilledBy)
			}
			continue
		}
		if i == 0 {
			facts.FirstExit = p.ExitCode
			f.first(t, s, p, rep, ok)
			continue
		}
		facts.LaterExits = append(facts.LaterExits, p.ExitCode)
		if p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitWorkerError || p.Signal != "" {
			f.c.Proc(p, "exit_code", "%s %s; a process after the cut ends in 0, or 3 for a worker error", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
		}
	}
	return facts, claims
}

// first checks the trial's first process: it exits 0 on the normal run
// and the other ACKs, and 17 at a crash point or a cut inside a sync, with
// the condition's crash kind, at that point; the normal run's report names
// the condition's points and the settings it read, and its log the syncs.
func (f *folder) first(t trialLine, s *conditionFold, p results.Process, rep protocol.Report, reported bool) {
	acks := t.o.Point == PointACK || t.o.Point == PointACKOpen || t.o.Point == PointACKReader
	if p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitCrash || p.Signal != "" {
		f.c.Proc(p, "exit_code", "%s %s; the first process ends in 0 or 17 (crash)", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
	if acks != (p.ExitCode == protocol.ExitACK) {
		f.c.Proc(p, "exit_code", "%d, but the trial's point is %q (an ACK exits 0, a crash 17)", p.ExitCode, t.o.Point)
	}
	if !reported {
		return
	}
	if p.ExitCode == protocol.ExitCrash && (rep.CrashKind != WorkerKind(t.cond) || rep.CrashedAt != t.o.Point) {
		f.c.Proc(p, "stdout", "the report's crashed_at is %q and crash_kind %q, but the trial's point is %q under a %q", rep.CrashedAt, rep.CrashKind, t.o.Point, WorkerKind(t.cond))
	}
	if q := s.seq(t.l); t.o.Point == PointACK && q.trials == 1 {
		q.all = f.st.Order(t.cond, rep.Points, t.o.syncWindow())
		q.order = f.st.share(t.cond, q.all, func(id string) bool { return shard.Holds(f.st.Shard, f.rec.Shards, t.l.Shard, id) })
		if first, ok := s.seqs[f.firstShard]; ok {
			results.SameDiscovery(&f.c, t.l, f.firstShard, "normal run gives the trials", q.all, first.all)
		}
		f.checkReadBack(t, p, rep)
	}
}
