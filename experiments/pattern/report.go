package pattern

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	pf "idemlab/experiments/subject/patternfile"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
)

// Report shows, per pattern and fault class, whether every invariant held,
// and where one did not, the first trial that broke it.
func (Scenario) Report(st Settings, res results.ScenarioResult, x Extra) (scenario.Section, error) {
	var sec scenario.Section
	sec.Settings = [][2]string{
		{"event", st.EventID}, {"fault classes", strings.Join(st.Faults, ", ")},
		{"seed", fmt.Sprint(st.Seed)},
		{"random trials", fmt.Sprintf("%d crash at a seeded k-th point, %d killed after a seeded delay", st.HitTrials, st.KillTrials)},
		{"races", fmt.Sprintf("%v racers, %d rounds each without and with kills", st.Racers, st.Rounds)},
	}
	if st.Postgres != nil {
		sec.Settings = append(sec.Settings, [2]string{"backend", fmt.Sprintf("%s, %s, synchronous_commit %s", st.Backend, st.Postgres.Isolation, st.Postgres.SynchronousCommit)})
	}
	conds := engine.ByName(res)
	if n := expectedBreaks(res); res.Pass && n > 0 {
		sec.PassNote = ExpectedBreaksWords(n)
	}
	findings := map[string]int{}
	for _, c := range res.Conditions {
		findings[c.Name] = len(c.Findings)
	}
	for i, p := range x.Patterns {
		pat := st.Patterns[i]
		t := scenario.Table{
			Title:  fmt.Sprintf("pattern %s (%s, sha256 %s): %d points discovered", p.Name, pat.Source, pat.SHA256[:12], len(p.Points)),
			Header: []string{"fault", "trials", "broke", "verdict", "first trial that broke an invariant"},
			Legend: []string{
				"broke: trials in which some invariant did not hold after the last delivery, or no delivery ACKed",
				"verdict: held, or broke; \"as listed\" where known_unsafe lists the class; a bare power asks that some power setting break (\"another setting broke\" on those that held), power:SETTING that one; ✗ where the run fails: a break known_unsafe does not list, or a listed class that held",
			},
		}
		var failed []map[string]int
		withFindings := false
		for _, c := range p.Conditions {
			withFindings = withFindings || findings[p.Name+"/"+conditionSuffix(c)] > 0
			t.Rows = append(t.Rows, []string{faultLabel(c), fmt.Sprint(c.Trials), fmt.Sprint(c.Violating), verdictText(conds[c.Name]), firstText(c.First)})
			failed = append(failed, c.Failed)
			for _, m := range c.Models {
				t.Rows = append(t.Rows, []string{"  " + modelLabel(m.Model), fmt.Sprint(m.Trials), fmt.Sprint(m.Violating), heldText(m.Violated), firstText(m.First)})
				failed = append(failed, nil)
			}
			if len(c.Kills) > 0 {
				t.Rows = append(t.Rows, []string{"  · where the kills landed", fmt.Sprint(len(c.Kills)), "-", "", landingsText(c.Kills)})
				failed = append(failed, nil)
				t.Legend = append(t.Legend, killLegend(pat, p, c.Kills))
			}
		}
		if slices.ContainsFunc(p.Conditions, func(c ConditionExtra) bool { return len(c.Models) > 0 }) {
			t.Legend = append(t.Legend, powerLegend(st.Unit())...)
			if st.SyncPoints && pat.File.IsProgram() {
				t.Legend = append(t.Legend, pf.SyncLegend)
			}
		}
		if withFindings {
			t.Legend = append(t.Legend, "findings: the records show what no verdict rests on (an invariant that returned no integer, a protocol finding), listed on stderr and in results.json; the class fails")
		}
		if pat.File.IsProgram() {
			if st.Backend == "" && len(pat.Power) == 0 && slices.Contains(st.Faults, wp.FaultPower) {
				t.Rows = append(t.Rows, []string{"power", "-", "-", "not applicable: " + pat.PowerNotApplicable, "a program's power cuts need a power-loss filesystem mount"})
			}
			t.Legend = append(t.Legend, programNotes(st, pat, p)...)
		}
		for _, n := range st.NotRun {
			where := st.Backend
			if n.Where != "" {
				where = n.Where
			}
			t.Rows = append(t.Rows, []string{n.Fault, "-", "-", "not run on " + where, n.Reason})
		}
		if p.About != "" {
			t.Legend = append(t.Legend, p.Name+": "+p.About)
		}
		addFailed(&t, failed)
		sec.Tables = append(sec.Tables, t)
		sec.Replays = append(sec.Replays, replays(st, pat, p)...)
	}
	return sec, nil
}

// replays are the commands that run a pattern's broken classes again: the
// same file, class and seed, and a power condition's setting alone. A crash at a point or a seeded hit, and a
// power cut, break again; a kill after a delay or a race may not.
func replays(st Settings, pat Pattern, p PatternExtra) []scenario.Replay {
	var out []scenario.Replay
	for _, c := range p.Conditions {
		if c.First == nil || c.Fault == FaultNone {
			continue
		}
		args := []string{"--scenario", Name, "--pattern-file", pat.Source, "--faults", c.Fault, "--seed", fmt.Sprint(st.Seed)}
		if st.Postgres != nil {
			args = append(args, "--backend", st.Backend, "--isolation", st.Target().Isolation.String(), "--synchronous-commit", st.Postgres.SynchronousCommit)
		}
		if st.Broker != nil {
			args = append(args, "--"+FlagBroker, st.Broker.Name)
			if st.Broker.URL != "" {
				args = append(args, "--"+FlagBrokerURL, st.Broker.URL)
			}
		}
		switch c.Fault {
		case "random":
			args = append(args, "--trials", fmt.Sprint(st.HitTrials+st.KillTrials))
		case "concurrent":
			args = append(args, "--rounds", fmt.Sprint(st.Rounds))
		case "power":
			args = append(args, "--power", c.Power)
			if st.SyncPoints {
				args = append(args, "--"+FlagSyncPoints)
			}
			if st.FaultUnit != 0 {
				args = append(args, "--"+FlagFaultUnit, fmt.Sprint(st.FaultUnit))
			}
		}
		what := fmt.Sprintf("%s/%s, trial %d", p.Name, conditionSuffix(c), c.First.Trial)
		if c.First.Kind == KindKill || c.First.Kind == KindRace {
			what += " (timed by the scheduler: it may not break again)"
		}
		out = append(out, scenario.Replay{What: what, Args: args})
	}
	return out
}

func conditionSuffix(c ConditionExtra) string {
	if c.Power != "" {
		return "power:" + c.Power
	}
	return c.Fault
}

func faultLabel(c ConditionExtra) string {
	switch c.Fault {
	case FaultNone:
		return "none (discovery)"
	case "power":
		return "power " + c.Power
	}
	return c.Fault
}

// verdictText says a condition's row verdict from its recorded figures:
// held or broke, and whether known_unsafe expected the break.
func verdictText(cr results.ConditionResult) string {
	var e Expected
	var o Verdict
	if json.Unmarshal(cr.Expected, &e) != nil || json.Unmarshal(cr.Observed, &o) != nil {
		return "unreadable ✗"
	}
	if len(cr.Findings) > 0 {
		// A class with findings says so rather than held: no verdict
		// rests on its trials alone.
		if o.Violated {
			return "broke, findings ✗"
		}
		return "findings ✗"
	}
	var v string
	switch {
	case o.Violated && e.Violated:
		v = "broke, as listed"
	case o.Violated:
		v = "broke"
	case !e.Violated:
		v = "held"
	case e.InSomeShard:
		v = "held in this shard (the merge judges)"
	case e.MayHold:
		v = "held this time (the OS schedules it)"
	case e.InSomeSetting && cr.Pass:
		v = "held (another setting broke)"
	case e.InSomeSetting:
		v = "held, but known_unsafe lists power: the run fails"
	default:
		v = HeldButListed
	}
	if !cr.Pass {
		v += " ✗"
	}
	return v
}

// expectedBreaks counts the passing conditions that broke because
// known_unsafe lists them.
func expectedBreaks(res results.ScenarioResult) int {
	n := 0
	for _, c := range res.Conditions {
		var e Expected
		var o Verdict
		if c.Pass && json.Unmarshal(c.Expected, &e) == nil && json.Unmarshal(c.Observed, &o) == nil && e.Violated && o.Violated {
			n++
		}
	}
	return n
}

// ExpectedBreaksWords is what a pass rests on when known_unsafe listed
// what broke: "3 classes break as known_unsafe expects".
func ExpectedBreaksWords(n int) string {
	if n == 1 {
		return "1 class breaks as known_unsafe expects"
	}
	return fmt.Sprintf("%d classes break as known_unsafe expects", n)
}

// addFailed adds a column of the failed steps after "broke", when any
// delivery's step failed (failed is each row's, nil for a model's row): a
// table of a pattern whose steps never fail reads as it always did.
func addFailed(t *scenario.Table, failed []map[string]int) {
	if !slices.ContainsFunc(failed, func(m map[string]int) bool { return len(m) > 0 }) {
		return
	}
	t.Header = slices.Insert(t.Header, 3, "failed steps")
	for i := range t.Rows {
		cell := "-"
		if i < len(failed) {
			cell = engine.Counts(failed[i], "%s %d")
		}
		t.Rows[i] = slices.Insert(t.Rows[i], 3, cell)
	}
	t.Legend = slices.Insert(t.Legend, 1, "failed steps: deliveries whose step failed, by error class (serialization: 40001, deadlock: 40P01, busy: SQLITE_BUSY, constraint); such a delivery is not ACKed, and the event is redelivered")
}

// firstText is a violation's cell: where it broke and what.
func firstText(f *Violation) string {
	if f == nil {
		return ""
	}
	return f.Text()
}

// powerLegend explains a power setting's rows, whose torn cuts decide
// units of unit bytes.
func powerLegend(unit int) []string {
	return []string{
		"power: the machine loses power at each discovered point, after the ACK (the connection closed), and at ack-open (after the ACK with the connection still open, as a service with a connection pool ACKs), then the event is redelivered; each cut under each model of what reaches the disk:",
		fmt.Sprintf("  drop: nothing no sync covered survives (the lower bound); keep: everything written survives, synced or not, as after a process crash (the upper bound); torn: each unsynced %d-byte unit kept, dropped or garbled, seeded from the run's seed, the condition and the trial", unit),
		"  a setting's verdict is the worst of its models: held only where it held under all three",
	}
}

// landingsText counts the kills by where they landed, in the order of
// the first trial that landed there.
func landingsText(kills []KillLanding) string {
	n := map[string]int{}
	var order []string
	for _, k := range kills {
		if n[k.Landing] == 0 {
			order = append(order, k.Landing)
		}
		n[k.Landing]++
	}
	return engine.CountsIn(order, n, "%s: %d", "; ")
}

// killLegend says over what the kills were drawn, and where each landed.
func killLegend(pat Pattern, p PatternExtra, kills []KillLanding) string {
	from := "the program's start"
	if pf.KillFromFirst(pat, p.Points) {
		from = fmt.Sprintf("the arrival of its first point (%s)", p.Points[0])
	}
	var each []string
	for _, k := range kills {
		each = append(each, fmt.Sprintf("trial %d %s", k.Trial, k.Landing))
	}
	return fmt.Sprintf("random: each kill comes a seeded delay after %s, drawn over the span from there to the end of the discovery delivery; it landed: %s", from, strings.Join(each, ", "))
}

// modelLabel is a power model's row.
func modelLabel(m string) string {
	return map[string]string{
		faultvfs.FaultDrop: "· drop",
		faultvfs.FaultKeep: "· keep",
		faultvfs.FaultTorn: "· torn",
	}[m]
}

// heldText is a model's verdict; the setting's row carries whether the
// run expected it.
func heldText(violated bool) string {
	if violated {
		return "broke"
	}
	return "held"
}

// programNotes say what a program's own protocol use meant for its trials.
func programNotes(st Settings, pat Pattern, p PatternExtra) []string {
	notes := []string{fmt.Sprintf("command %q, run in %s, killed after %d ms", pat.File.Command, pat.Dir, pat.TimeoutMS)}
	if len(p.Points) == 0 {
		notes = append(notes, "the program announces no points: only the seeded-delay kills apply to it")
	}
	if slices.Contains(st.Faults, "concurrent") {
		if len(p.Points) > 0 && p.Points[0] == "ready" {
			notes = append(notes, "concurrent: the program's first point is \"ready\"; the racers were released there together")
		} else {
			notes = append(notes, "concurrent: the racers were started together, with no barrier (the program's first point is not \"ready\")")
		}
	}
	return notes
}
