package durability

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// Facts are what the classifier needs of one trial, all taken from the
// records: the parent's reads, the receiver's log and the exit codes.
type Facts struct {
	Pattern   string
	EventID   string
	JobID     string
	Items     int
	FirstExit int
	// LaterExits are the exit codes of the processes after the cut.
	LaterExits []int
	Before     Rows
	After      Rows
	Final      Rows
	Integrity  []string
	Sends      []receiver.Entry
	// Wins are the claim times of the claim processes after the cut that
	// say they won; FollowUps the external ids of those that say they
	// wrote the downstream fields, in order.
	Wins      []int64
	FollowUps []string
}

// Classify turns one trial's facts into an outcome; the oracle's sets are
// written in the same tags.
func Classify(f Facts) (outcome string, rowsLost int) {
	tags := map[string]bool{}
	if len(f.Integrity) != 1 || f.Integrity[0] != "ok" {
		tags[TagCorrupt] = true
	}
	for _, tb := range sortedKeys(f.Before) {
		rowsLost += lost(f.Before[tb], f.After[tb])
	}
	if rowsLost > 0 {
		if f.FirstExit == protocol.ExitACK {
			tags[TagLostAcked] = true
		} else {
			tags[TagRolledBack] = true
		}
	}
	for _, c := range f.LaterExits {
		if c != protocol.ExitACK {
			tags[TagError] = true
		}
	}
	switch f.Pattern {
	case PatternClaim:
		classifyClaim(f, tags)
	case PatternBatch:
		accepted := map[string]int{}
		for _, s := range f.Sends {
			if s.Accepted() {
				accepted[s.Job+":"+s.Item+":"+s.Step]++
			}
		}
		for i := 1; i <= f.Items; i++ {
			k := wb.Key{Job: f.JobID, Item: wb.ItemID(i), Step: wb.StepNotify}.String()
			tags[TagDuplicate] = tags[TagDuplicate] || accepted[k] > 1
			tags[TagMissing] = tags[TagMissing] || accepted[k] == 0
		}
		done := map[string]bool{}
		for _, r := range f.Final[TableJournal] {
			p := strings.Split(r, "|")
			if len(p) >= 4 && wb.IsSideEffect(p[2]) && p[3] == string(wb.Succeeded) {
				done[p[1]] = true
			}
		}
		for i := 1; i <= f.Items; i++ {
			tags[TagMissing] = tags[TagMissing] || !done[wb.ItemID(i)]
		}
	default:
		jobs, processed := len(f.Final[TableJobs]), len(f.Final[TableProcessed])
		tags[TagDuplicate] = jobs > 1
		tags[TagMissing] = jobs == 0 || processed == 0
	}
	return Join(tags), rowsLost
}

// lost counts rows of before that after lacks, as multisets.
func lost(before, after []string) int {
	have := map[string]int{}
	for _, r := range after {
		have[r]++
	}
	n := 0
	for _, r := range before {
		if have[r] > 0 {
			have[r]--
		} else {
			n++
		}
	}
	return n
}

// Extra is the scenario's derived extra table: the matrix for a heat map.
type Extra struct {
	Matrix Matrix `json:"matrix"`
}

// Matrix is setting × point → outcome. Rows are "MODE/SYNC/kind",
// columns "pattern/point"; an empty outcome means not run.
type Matrix struct {
	Rows     []string   `json:"rows"`
	Columns  []string   `json:"columns"`
	Outcomes [][]string `json:"outcomes"`
	// Severity orders outcomes for colour: 0 ok, 1 rolled back, 2 lost
	// acknowledged work, duplicate, missing or error, 3 corrupt; -1 not run.
	Severity [][]int `json:"severity"`
}

// Severity ranks an outcome for the heat map.
func Severity(outcome string) int {
	switch {
	case outcome == "":
		return -1
	case outcome == OutcomeOK:
		return 0
	case strings.Contains(outcome, TagCorrupt):
		return 3
	case outcome == TagRolledBack:
		return 1
	}
	return 2
}

// Fold derives every trial's outcome from the records, checking each
// process line against the settings and the trial it belongs to.
func (Scenario) Fold(raw json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	var c results.Checker
	folded := scenario.Folded{Observed: map[string]any{}}
	var st Settings
	if err := scenario.DecodeStrict(raw, &st); err != nil {
		c.Add("results.json", "scenarios[durability].settings", "not durability settings: %v", err)
		return folded, c.Findings
	}
	conds := map[string]Condition{}
	for _, cond := range st.Conditions {
		conds[cond.Name] = cond
	}
	type state struct {
		points []string // discovered by the normal run
		trials int
		out    map[string]Trial
	}
	per := map[string]*state{}
	dirs := map[string]int{}
	for _, l := range rec.Observations {
		var o Observation
		if err := results.DecodeStrict(l.Raw, &o); err != nil {
			c.Obs(l, "", "not a durability observation: %v", err)
			continue
		}
		cond, ok := conds[o.Condition]
		if !ok {
			c.Obs(l, "condition", "%q is not a condition in the settings", o.Condition)
			continue
		}
		s := per[o.Condition]
		if s == nil {
			s = &state{out: map[string]Trial{}}
			per[o.Condition] = s
		}
		// The normal run comes first and names the points; the crash
		// trials follow them in order.
		switch {
		case s.trials == 0 && o.Point != PointACK:
			c.Obs(l, "point", "%q, but a condition's first trial is the normal run (%q) that discovers the points", o.Point, PointACK)
		case s.trials > 0 && (s.trials > len(s.points) || o.Point != s.points[s.trials-1]):
			c.Obs(l, "point", "%q, but the normal run reported the points %q, tried in that order", o.Point, s.points)
		}
		s.trials++
		if _, dup := s.out[o.Point]; dup {
			c.Obs(l, "point", "%q was already tried in this condition", o.Point)
		}
		wantDB := DBName(cond.Pattern)
		if filepath.Base(o.DB) != wantDB {
			c.Obs(l, "db", "%q, but the pattern's file is named %s", o.DB, wantDB)
		}
		if prev, dup := dirs[filepath.Dir(o.DB)]; dup {
			c.Obs(l, "db", "folder %s is also line %d's; every trial starts on a fresh folder", filepath.Dir(o.DB), prev)
		}
		dirs[filepath.Dir(o.DB)] = l.N
		checkShape(&c, l, cond, st, o)
		f := Facts{Pattern: cond.Pattern, EventID: st.EventID, JobID: st.JobID, Items: st.Items, Before: o.Before, After: o.After, Final: o.Final, Integrity: o.Integrity, Sends: o.Sends, FirstExit: -1}
		var claims []claimStep
		for i, step := range o.Steps {
			p, ok := c.Use(rec, l, step.ProcessID)
			if !ok {
				continue
			}
			worker, args := StepArgs(st, cond, step.Role, o.DB, o.Receiver)
			if cond.Pattern == PatternBatch && step.Role == RoleResolve && step.Lookup != nil {
				worker, args = wb.WorkerResolve, ResolveArgs(st, o.DB, *step.Lookup).Argv()
			}
			env := Env(cond)
			if i == 0 {
				env = FirstEnv(cond, o.Point)
			}
			c.Argv(p, worker, args)
			c.Env(p, env)
			rep, ok := c.Report(p)
			if cond.Pattern == PatternClaim {
				claims = append(claims, claimStep{role: step.Role, p: p, rep: rep, ok: ok})
			}
			if i == 0 {
				f.FirstExit = p.ExitCode
				if p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitCrash || p.Signal != "" {
					c.Proc(p, "exit_code", "%d (signal %q) is not an outcome of the first process (0 or 17)", p.ExitCode, p.Signal)
				}
				if (o.Point == PointACK) != (p.ExitCode == protocol.ExitACK) {
					c.Proc(p, "exit_code", "%d, but the trial's point is %q (the normal run exits 0, a crash 17)", p.ExitCode, o.Point)
				}
				if ok && p.ExitCode == protocol.ExitCrash && rep.CrashKind != cond.Kind {
					c.Proc(p, "stdout", "the report's crash_kind is %q, the condition's %q", rep.CrashKind, cond.Kind)
				}
				if ok && o.Point == PointACK {
					s.points = rep.Points
					checkReadBack(&c, p, rep, cond)
				}
				continue
			}
			f.LaterExits = append(f.LaterExits, p.ExitCode)
			if p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitWorkerError || p.Signal != "" {
				c.Proc(p, "exit_code", "%d (signal %q) is not an outcome of a process after the cut (0, or 3 for a worker error)", p.ExitCode, p.Signal)
			}
		}
		if cond.Pattern == PatternClaim {
			checkClaim(&c, l, st, o, claims, &f)
		}
		out, n := Classify(f)
		t := Trial{Outcome: out, FirstExit: f.FirstExit, RowsLost: n, Integrity: strings.Join(o.Integrity, "; ")}
		if o.Recovery != nil {
			for _, fr := range o.Recovery.Files {
				if fr.Changed {
					t.Recovered = append(t.Recovered, fr.Name+":"+fr.Action)
				}
			}
		}
		s.out[o.Point] = t
	}
	for _, cond := range st.Conditions {
		s := per[cond.Name]
		if s == nil {
			continue
		}
		if s.trials != len(s.points)+1 {
			c.Add("observations.jsonl", "condition "+cond.Name, "%d trials recorded, but the normal run reported %d points (and itself)", s.trials, len(s.points))
		}
		folded.Observed[cond.Name] = s.out
	}
	c.Unused(rec, 1)
	folded.Extra = Extra{Matrix: BuildMatrix(st, folded.Observed)}
	return folded, c.Findings
}

// checkShape checks what a trial's line must hold for its kind and
// pattern: the steps in order, a recovery report exactly for a power cut,
// the tables read, and the receiver's log only for batch.
func checkShape(c *results.Checker, l results.Line, cond Condition, st Settings, o Observation) {
	roles := make([]string, len(o.Steps))
	for i, s := range o.Steps {
		roles[i] = s.Role
		if (s.Role == RoleResolve) != (s.Lookup != nil) {
			c.Obs(l, results.Field("steps", i), "a resolve carries the receiver lookup, and only a resolve")
		}
		if s.Lookup != nil && s.Lookup.Found {
			if !slices.ContainsFunc(o.Sends, func(e receiver.Entry) bool {
				return e.Accepted() && e.Job+":"+e.Item+":"+e.Step == s.Lookup.Key && e.Receipt == s.Lookup.Receipt
			}) {
				c.Obs(l, results.Field("steps", i, "lookup"), "found receipt %q for %s, but the receiver's log has no such accepted send", s.Lookup.Receipt, s.Lookup.Key)
			}
		}
	}
	want := "first second"
	if cond.Pattern == PatternClaim {
		want = strings.Join([]string{RoleFirst, RoleProbe, RoleReclaim}, " ")
	}
	got := strings.Join(roles, " ")
	if cond.Pattern == PatternBatch {
		inner := strings.TrimSuffix(strings.TrimPrefix(got, "first second"), " third")
		if !strings.HasPrefix(got, "first second") || !strings.HasSuffix(got, " third") || strings.Trim(strings.ReplaceAll(inner, " resolve", ""), " ") != "" {
			c.Obs(l, "steps", "roles %q, want first, second, any resolves, third", got)
		}
	} else if got != want {
		c.Obs(l, "steps", "roles %q, want %q", got, want)
	}
	if (o.Recovery != nil) != (cond.Kind == KindPower) {
		c.Obs(l, "recovery", "present=%v, but a recovery report comes with a power cut and only then (kind %s)", o.Recovery != nil, cond.Kind)
	}
	if o.Recovery != nil {
		checkRecovery(c, l, o.Recovery)
	}
	tables := Tables(cond.Pattern)
	if cond.Pattern == PatternBatch {
		if o.Receiver == "" || len(o.Sends) == 0 {
			// Every batch trial ends with every item sent at least once.
			c.Obs(l, "sends", "empty, but the batch trial's receiver logs every send")
		}
	} else if o.Receiver != "" || o.Sends != nil {
		c.Obs(l, "receiver", "only a batch trial has a receiver")
	}
	if cond.Pattern == PatternClaim {
		claimShape(c, l, st, o)
	}
	for _, name := range []string{"before", "after", "final"} {
		r := map[string]Rows{"before": o.Before, "after": o.After, "final": o.Final}[name]
		for _, tb := range tables {
			if r[tb] == nil {
				c.Obs(l, name, "table %s is missing; every table is listed, empty or not", tb)
			}
		}
		if len(r) != len(tables) {
			c.Obs(l, name, "has %d tables, the pattern has %d", len(r), len(tables))
		}
	}
	for i, row := range o.Final[TableJobs] {
		if row != st.EventID+"|"+st.JobKey {
			c.Obs(l, results.Field("final", TableJobs, i), "is %q, but the only event delivered is %s|%s", row, st.EventID, st.JobKey)
		}
	}
	if len(o.Integrity) == 0 {
		c.Obs(l, "integrity", "empty; integrity_check always answers")
	}
}

// checkRecovery checks faultvfs's report for what its rules allow: a
// removed file has no size after, the index file never survives.
func checkRecovery(c *results.Checker, l results.Line, r *faultvfs.Report) {
	for i, f := range r.Files {
		switch f.Action {
		case faultvfs.ActRemove:
			if f.After != -1 {
				c.Obs(l, results.Field("recovery", "files", i), "removed, but %d bytes after", f.After)
			}
		case faultvfs.ActRestore, faultvfs.ActResurrect:
			if strings.HasSuffix(f.Name, "-shm") {
				c.Obs(l, results.Field("recovery", "files", i), "the WAL index %s is never durable, yet %s", f.Name, f.Action)
			}
		default:
			c.Obs(l, results.Field("recovery", "files", i), "action %q is not one of faultvfs's", f.Action)
		}
	}
}

// checkReadBack checks that the normal run's worker opened its file with
// the condition's settings through the fault VFS.
func checkReadBack(c *results.Checker, p results.Process, rep protocol.Report, cond Condition) {
	want := sqlitedb.Settings{JournalMode: cond.JournalMode, Synchronous: cond.Synchronous, BusyTimeoutMS: busyTimeoutMS, VFS: faultvfs.Name}
	var got sqlitedb.Settings
	switch cond.Pattern {
	case PatternClaim:
		var r we.ClaimResult
		if err := results.DecodeStrict(rep.Result, &r); err != nil {
			c.Proc(p, "stdout", "the report's result is not a claim result: %v", err)
			return
		}
		got = r.Settings
	case PatternBatch:
		var r wb.RunResult
		if err := results.DecodeStrict(rep.Result, &r); err != nil || r.SQLite == nil {
			c.Proc(p, "stdout", "the report's result is not a batch run result with its settings: %v", err)
			return
		}
		got, want.LockingMode = *r.SQLite, wb.Options("").LockingMode
	default:
		var r wr.Result
		if err := results.DecodeStrict(rep.Result, &r); err != nil {
			c.Proc(p, "stdout", "the report's result is not a delivery result: %v", err)
			return
		}
		got = r.Settings
	}
	if got != want {
		c.Proc(p, "stdout", "the worker read back %s, the condition requires %s", results.Compact(got), results.Compact(want))
	}
}

// BuildMatrix lays the observed outcomes out as setting × point.
func BuildMatrix(st Settings, observed map[string]any) Matrix {
	var m Matrix
	rowIdx, colIdx := map[string]int{}, map[string]int{}
	for _, p := range AllPatterns {
		for _, pt := range append([]string{PointACK}, Points(p, st.Items)...) {
			if slices.ContainsFunc(st.Conditions, func(c Condition) bool { return c.Pattern == p }) {
				colIdx[p+"/"+pt] = len(m.Columns)
				m.Columns = append(m.Columns, p+"/"+pt)
			}
		}
	}
	for _, c := range st.Conditions {
		r := c.JournalMode + "/" + c.Synchronous + "/" + c.Kind
		if _, ok := rowIdx[r]; !ok {
			rowIdx[r] = len(m.Rows)
			m.Rows = append(m.Rows, r)
		}
	}
	for range m.Rows {
		o := make([]string, len(m.Columns))
		s := make([]int, len(m.Columns))
		for j := range s {
			s[j] = -1
		}
		m.Outcomes, m.Severity = append(m.Outcomes, o), append(m.Severity, s)
	}
	for _, c := range st.Conditions {
		trials, _ := observed[c.Name].(map[string]Trial)
		i := rowIdx[c.JournalMode+"/"+c.Synchronous+"/"+c.Kind]
		for pt, t := range trials {
			if j, ok := colIdx[c.Pattern+"/"+pt]; ok {
				m.Outcomes[i][j], m.Severity[i][j] = t.Outcome, Severity(t.Outcome)
			}
		}
	}
	return m
}
