package review

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/claim"
	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
	wc "idemlab/worker/claim"
	"idemlab/worker/protocol"
)

func init() {
	register(claim.Name, plugin{
		article:       "003.json",
		check:         checkClaim,
		deterministic: deterministicClaim,
		overrides:     overridesClaim,
		articleTable:  articleClaim,
		cell:          cellClaim,
		charts:        chartsClaim,
	})
}

// claimRound is the part of a claim condition the chart needs: winners per
// race (round) of one condition.
type claimRound struct {
	Outcome []struct {
		Race    string `json:"race"`
		Winners int    `json:"winners"`
	} `json:"outcome"`
}

func claimWinners(v any) (map[string]float64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var rounds []claimRound
	if err := json.Unmarshal(b, &rounds); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, r := range rounds {
		for _, o := range r.Outcome {
			out[o.Race] = max(out[o.Race], float64(o.Winners))
		}
	}
	return out, nil
}

func chartsClaim(_ *Folder, s harness.ScenarioResult) ([]Chart, error) {
	var cats []string
	var obs, exp []map[string]float64
	races := map[string]bool{}
	for _, c := range s.Conditions {
		// Conditions of another shape, such as the mutant table, are
		// not races and are left out of this chart.
		o, err1 := claimWinners(c.Observed)
		e, err2 := claimWinners(c.Expected)
		if err1 != nil || err2 != nil || len(o) == 0 {
			continue
		}
		for r := range o {
			races[r] = true
		}
		for r := range e {
			races[r] = true
		}
		cats = append(cats, c.Name)
		obs, exp = append(obs, o), append(exp, e)
	}
	var names []string
	for r := range races {
		names = append(names, r)
	}
	sort.Strings(names)
	var bars, crosses []Series
	for _, r := range names {
		b := Series{Name: "observed winners, race " + r}
		e := Series{Name: "expected, race " + r}
		for i := range cats {
			b.Values = append(b.Values, obs[i][r])
			e.Values = append(e.Values, exp[i][r])
		}
		bars, crosses = append(bars, b), append(crosses, e)
	}
	svg, err := barChart("claim winners per race (the most seen in any repetition)", "winners", cats, bars, crosses)
	if err != nil {
		return nil, fmt.Errorf("claim chart: %w", err)
	}
	return []Chart{{
		Title: "Claim winners per round", Slug: "claim-winners", SVG: svg,
		Caption: "Each condition races its workers in rounds A and B; bars are the largest number of winners seen in any repetition, crosses the oracle's. More than one winner in a round would be the accident the claim exists to prevent.",
	}}, nil
}

func claimSettings(s harness.ScenarioResult) (claim.Settings, error) {
	var st claim.Settings
	if err := decodeStrict(s.Settings, &st); err != nil {
		return st, err
	}
	if st.Workers < claim.MinWorkers || st.Workers > claim.MaxWorkers || st.Repetitions < 1 || st.Repetitions > claim.MaxReps {
		return st, fmt.Errorf("workers %d or repetitions %d out of range", st.Workers, st.Repetitions)
	}
	if st.Mutants && (st.MutantRepetitions < 1 || st.MutantRepetitions > claim.MaxReps) {
		return st, fmt.Errorf("mutant_repetitions %d out of range", st.MutantRepetitions)
	}
	return st, nil
}

func claimExtra(s harness.ScenarioResult) (claim.Extra, error) {
	var ex claim.Extra
	err := decodeStrict(s.Extra, &ex)
	return ex, err
}

func hasKind(r claim.Round, v wc.Variant) bool {
	for _, k := range r.Kinds {
		if k == v {
			return true
		}
	}
	return false
}

// claimLines is a condition's observation lines by repetition, in file
// order, decoded.
type claimLines map[int][]claimLine

type claimLine struct {
	line Line
	obs  claim.Observation
}

// claimObservations decodes every claim line once and files it by
// condition and repetition.
func claimObservations(f *Folder, scenario string, add func(file, fld, format string, args ...any)) map[string]claimLines {
	out := map[string]claimLines{}
	for _, l := range f.Observations {
		if l.Data["scenario"] != scenario {
			continue
		}
		var o claim.Observation
		if err := decodeStrict(l.Data, &o); err != nil {
			add(harness.ObservationsFile, fmt.Sprintf("line %d", l.N), "not a claim observation: %v", err)
			continue
		}
		if out[o.Condition] == nil {
			out[o.Condition] = claimLines{}
		}
		out[o.Condition][o.Repetition] = append(out[o.Condition][o.Repetition], claimLine{l, o})
	}
	return out
}

// claimCheck holds what every condition's check needs.
type claimCheck struct {
	f      *Folder
	st     claim.Settings
	params claim.Params
	lines  map[string]claimLines
	busy   map[string]int
	add    func(file, fld, format string, args ...any)
}

// rebuild derives a condition's grouped outcomes from its lines, checking
// each line against its round, its racers and their processes on the way,
// as the scenario derives them from the races.
func (c *claimCheck) rebuild(cond string, kind wc.Variant, r claim.Round, reps int) []claim.Group {
	byRep := c.lines[cond]
	for rep := range byRep {
		if rep < 1 || rep > reps {
			c.add(harness.ObservationsFile, fmt.Sprintf("line %d: repetition", byRep[rep][0].line.N), "%d, but condition %s ran %d repetitions", rep, cond, reps)
		}
	}
	var perRep [][]claim.RaceOutcome
	for rep := 1; rep <= reps; rep++ {
		ls := byRep[rep]
		if len(ls) != len(r.Races) {
			c.add(harness.ObservationsFile, "condition "+cond, "repetition %d has %d lines, but round %s has %d races", rep, len(ls), r.ID, len(r.Races))
		}
		var outs []claim.RaceOutcome
		var marks []claim.RaceMarks
		for i, cl := range ls {
			o := cl.obs
			outs = append(outs, o.Outcome)
			if i >= len(r.Races) {
				continue
			}
			marks = append(marks, c.checkLine(cl, kind, r, r.Races[i], marks))
		}
		perRep = append(perRep, outs)
	}
	return claim.GroupOutcomes(perRep)
}

func (c *claimCheck) checkLine(cl claimLine, kind wc.Variant, r claim.Round, race claim.Race, prev []claim.RaceMarks) claim.RaceMarks {
	o, line := cl.obs, fmt.Sprintf("line %d", cl.line.N)
	by := kind
	if race.By != "" {
		by = race.By
	}
	if o.Round != r.ID {
		c.add(harness.ObservationsFile, line+": round", "%q, but condition %s is round %q", o.Round, o.Condition, r.ID)
	}
	if o.Variant != by {
		c.add(harness.ObservationsFile, line+": variant", "%q, but race %s of round %s is claimed by %q", o.Variant, race.Name, r.ID, by)
	}
	for _, d := range diffPaths(line+": race", race, o.Race) {
		c.add(harness.ObservationsFile, d.Path, "is %s in settings.rounds, %s here", d.A, d.B)
	}
	m := claim.RaceMarks{Name: race.Name, EventMS: o.EventMS}
	winners, paths := 0, map[wc.Path]int{}
	for j, rc := range o.Racers {
		rf := fmt.Sprintf("%s: racers[%d]", line, j)
		res := rc.Result
		paths[res.Outcome.Path]++
		c.busy[o.Condition] += res.BusyRetries
		if res.Outcome.Won {
			winners++
			m.WinnerNows = append(m.WinnerNows, res.Outcome.NowMS)
			if res.FollowedUp {
				m.ExternalIDs = append(m.ExternalIDs, res.ExternalID)
			}
		}
		if res.Variant != by {
			c.add(harness.ObservationsFile, rf+".result.variant", "%q, want %q", res.Variant, by)
		}
		p, pline, ok := c.f.process(rc.ProcessID)
		if !ok {
			continue // the generic check reports it
		}
		pf := func(name string) string { return fmt.Sprintf("line %d: %s", pline, name) }
		if p.Worker != claim.RaceWorker {
			c.add(harness.ProcessesFile, pf("worker"), "is %q, but %s %s names it as a racer (%s)", p.Worker, harness.ObservationsFile, rf, claim.RaceWorker)
		}
		if p.Label != res.Label {
			c.add(harness.ProcessesFile, pf("label"), "is %q, but %s %s reports racer %q", p.Label, harness.ObservationsFile, rf, res.Label)
		}
		if p.ExitCode != protocol.ExitACK {
			c.add(harness.ProcessesFile, pf("exit_code"), "%d, but %s %s records its claim; a racer that reports exits 0", p.ExitCode, harness.ObservationsFile, rf)
		}
		var rep wc.RaceResult
		if pr, err := harness.ParseReport(p.Stdout); err == nil && harness.DecodeResult(pr, &rep) == nil {
			if rep.Outcome.Won != res.Outcome.Won || rep.Outcome.Path != res.Outcome.Path {
				c.add(harness.ObservationsFile, rf+".result.outcome", "won=%v path=%s, but process %d reported won=%v path=%s", res.Outcome.Won, res.Outcome.Path, rc.ProcessID, rep.Outcome.Won, rep.Outcome.Path)
			}
		}
	}
	if n := race.Racers(c.st.Workers); len(o.Racers) != n || o.Outcome.Workers != n {
		c.add(harness.ObservationsFile, line+": outcome.workers", "%d with %d racers listed, but race %s runs %d", o.Outcome.Workers, len(o.Racers), race.Name, n)
	}
	if o.Outcome.Winners != winners {
		c.add(harness.ObservationsFile, line+": outcome.winners", "is %d, but %d racers report winning", o.Outcome.Winners, winners)
	}
	if !cmp.Equal(o.Outcome.Paths, paths) {
		c.add(harness.ObservationsFile, line+": outcome.paths", "is %s, but the racers report %s", compact(o.Outcome.Paths), compact(paths))
	}
	if o.Outcome.Race != race.Name {
		c.add(harness.ObservationsFile, line+": outcome.race", "is %q, want %q", o.Outcome.Race, race.Name)
	}
	marks := append(append([]claim.RaceMarks{}, prev...), m)
	for _, d := range diffPaths(line+": outcome.row", claim.Summarize(o.Row, r.Schema == wc.SchemaNew, marks), o.Outcome.Row) {
		c.add(harness.ObservationsFile, d.Path, "the row and the racers give %s, the line says %s", d.A, d.B)
	}
	return m
}

// checkClaim checks every round condition against the oracle replayed
// from the recorded settings and against the observation lines, and the
// mutant table against the mutants' own lines: which rounds killed a
// mutant must follow from what its races observed.
func checkClaim(f *Folder, s harness.ScenarioResult) []Finding {
	var out []Finding
	add := func(file, fld, format string, args ...any) {
		out = append(out, Finding{File: file, Field: fld, Message: fmt.Sprintf(format, args...)})
	}
	sbase := field("scenarios", key(s.Name))
	st, err := claimSettings(s)
	if err != nil {
		add(harness.ResultsFile, sbase+".settings", "cannot replay the oracle from the recorded settings: %v", err)
		return out
	}
	ex, err := claimExtra(s)
	if err != nil {
		add(harness.ResultsFile, sbase+".extra", "not the claim extra table: %v", err)
		return out
	}
	if st.Boundary != wc.Chosen {
		add(harness.ResultsFile, sbase+".settings.boundary", "is %q, but the TTL claim is built with %q", st.Boundary, wc.Chosen)
	}
	if st.Classification == "" {
		add(harness.ResultsFile, sbase+".settings.classification", "is missing; the oracle needs it to name the downstream field")
	}
	for _, d := range diffPaths(sbase+".settings.rounds", claim.Rounds(time.Duration(st.TTLMS)*time.Millisecond), st.Rounds) {
		add(harness.ResultsFile, d.Path, "the rounds for ttl_ms %d are %s, the file says %s", st.TTLMS, d.A, d.B)
	}
	c := &claimCheck{
		f: f, st: st, params: claim.Params{Workers: st.Workers, TTLMS: st.TTLMS, Classification: st.Classification},
		lines: claimObservations(f, s.Name, add), busy: map[string]int{}, add: add,
	}
	type want struct {
		round claim.Round
		kind  wc.Variant
	}
	known := map[string]want{}
	var names []string
	for _, r := range st.Rounds {
		for _, k := range []wc.Variant{wc.Legacy, wc.TTL} {
			if hasKind(r, k) {
				n := claim.RoundCondition(r.ID, k)
				known[n] = want{r, k}
				names = append(names, n)
			}
		}
	}
	observedLines := map[string]bool{}
	seen := map[string]bool{}
	conds := map[string]harness.ConditionResult{}
	for _, cond := range s.Conditions {
		conds[cond.Name] = cond
	}
	for _, cond := range s.Conditions {
		base := field("scenarios", key(s.Name), "conditions", key(cond.Name))
		seen[cond.Name] = true
		w, ok := known[cond.Name]
		if !ok {
			if strings.HasPrefix(cond.Name, "mutants/") && st.Mutants {
				continue // checked with the mutant table below
			}
			add(harness.ResultsFile, base+".name", "not a condition of scenario %s with these settings", s.Name)
			continue
		}
		var exp, obs []claim.Group
		if err := decodeStrict(cond.Expected, &exp); err != nil {
			add(harness.ResultsFile, base+".expected", "not a list of outcome groups: %v", err)
			continue
		}
		if err := decodeStrict(cond.Observed, &obs); err != nil {
			add(harness.ResultsFile, base+".observed", "not a list of outcome groups: %v", err)
			continue
		}
		oracle := claim.ExpectedGroups(claim.Expect(w.kind, w.round, wc.Chosen, c.params), st.Repetitions)
		for _, d := range diffPaths(base+".expected", oracle, exp) {
			add(harness.ResultsFile, d.Path, "the oracle computes %s, the file says %s", d.A, d.B)
		}
		if pass, _ := claim.Check(exp, obs); pass != cond.Pass {
			add(harness.ResultsFile, base+".pass", "is %v, but expected and observed %s", cond.Pass, map[bool]string{true: "agree", false: "differ"}[pass])
		}
		observedLines[cond.Name] = true
		for _, d := range diffPaths(base+".observed", c.rebuild(cond.Name, w.kind, w.round, st.Repetitions), obs) {
			add(harness.ResultsFile, d.Path, "is %s, but %s gives %s for it", d.B, harness.ObservationsFile, d.A)
		}
	}
	for _, n := range names {
		if !seen[n] {
			add(harness.ResultsFile, sbase+".conditions", "condition %s is missing; every run records all %d rounds", n, len(names))
		}
	}
	out = append(out, c.mutants(s, ex, conds, observedLines)...)
	for cond, byRep := range c.lines {
		if observedLines[cond] {
			continue
		}
		for _, ls := range byRep {
			for _, cl := range ls {
				add(harness.ObservationsFile, fmt.Sprintf("line %d: condition", cl.line.N), "%q is neither a round condition nor a mutant round of this run", cond)
			}
		}
	}
	bbase := sbase + ".extra.busy_retries"
	for name, n := range ex.BusyRetries {
		if !observedLines[name] {
			add(harness.ResultsFile, fmt.Sprintf("%s[%s]", bbase, name), "names no condition with observations")
		} else if c.busy[name] != n {
			add(harness.ResultsFile, fmt.Sprintf("%s[%s]", bbase, name), "is %d, but the racers in %s report %d", n, harness.ObservationsFile, c.busy[name])
		}
	}
	return out
}

// mutants recomputes the mutant table from the mutants' lines: a round
// kills a mutant when the outcome its races observed differs from the TTL
// claim's oracle.
func (c *claimCheck) mutants(s harness.ScenarioResult, ex claim.Extra, conds map[string]harness.ConditionResult, observedLines map[string]bool) []Finding {
	var out []Finding
	add := func(fld, format string, args ...any) {
		out = append(out, Finding{File: harness.ResultsFile, Field: fld, Message: fmt.Sprintf(format, args...)})
	}
	sbase := field("scenarios", key(s.Name))
	if !c.st.Mutants {
		if ex.Mutants != nil {
			add(sbase+".extra.mutants", "is present, but settings.mutants is false")
		}
		return out
	}
	t := ex.Mutants
	if t == nil {
		add(sbase+".extra.mutants", "is missing, but settings.mutants is true")
		return out
	}
	if t.Repetitions != c.st.MutantRepetitions {
		add(sbase+".extra.mutants.repetitions", "is %d, but settings.mutant_repetitions is %d", t.Repetitions, c.st.MutantRepetitions)
	}
	if len(t.Rows) != len(wc.Mutants) {
		add(sbase+".extra.mutants.rows", "has %d rows, want one per mutant (%d)", len(t.Rows), len(wc.Mutants))
	}
	for i, m := range wc.Mutants {
		row := claim.MutantRow{}
		rbase := fmt.Sprintf("%s.extra.mutants.rows[%d]", sbase, i)
		if i < len(t.Rows) {
			row = t.Rows[i]
		}
		if row.Mutant != m {
			add(rbase+".mutant", "is %q, want %q", row.Mutant, m)
		}
		killedBy, survived := []string{}, []string{}
		for _, r := range c.st.Rounds {
			if !hasKind(r, wc.TTL) {
				continue
			}
			name := claim.RoundCondition(r.ID, m)
			observedLines[name] = true
			got := c.rebuild(name, m, r, c.st.MutantRepetitions)
			if pass, _ := claim.Check(claim.ExpectedGroups(claim.Expect(wc.TTL, r, wc.Chosen, c.params), c.st.MutantRepetitions), got); pass {
				survived = append(survived, r.ID)
			} else {
				killedBy = append(killedBy, r.ID)
			}
		}
		killed := len(killedBy) > 0
		if !cmp.Equal(row.KilledBy, killedBy) {
			add(rbase+".killed_by", "is %s, but the mutant's rounds in %s were killed by %s", compact(row.KilledBy), harness.ObservationsFile, compact(killedBy))
		}
		if !cmp.Equal(row.Survived, survived) {
			add(rbase+".survived", "is %s, but the mutant's rounds in %s survived %s", compact(row.Survived), harness.ObservationsFile, compact(survived))
		}
		if row.Killed != killed {
			add(rbase+".killed", "is %v, but the observations give %v", row.Killed, killed)
		}
		cname := claim.MutantCondition(m)
		cond, ok := conds[cname]
		cbase := field("scenarios", key(s.Name), "conditions", key(cname))
		if !ok {
			add(sbase+".conditions", "condition %s is missing; settings.mutants is true", cname)
			continue
		}
		var exp, obs claim.MutantVerdict
		if err := decodeStrict(cond.Expected, &exp); err != nil || !exp.Killed {
			add(cbase+".expected", "is %s, but every mutant must be killed ({\"killed\":true})", compact(cond.Expected))
		}
		if err := decodeStrict(cond.Observed, &obs); err != nil || obs.Killed != killed {
			add(cbase+".observed", "is %s, but the observations give killed=%v", compact(cond.Observed), killed)
		}
		if cond.Pass != killed {
			add(cbase+".pass", "is %v, but the mutant was %s", cond.Pass, map[bool]string{true: "killed", false: "not killed"}[killed])
		}
	}
	return out
}

// claimRun is what a rerun of the claim scenario must reproduce: outcomes
// per race, the claim rows in terms of which race left each value, exit
// codes and the mutant kills; never who won, clocks or busy retries.
type claimRun struct {
	Settings   claim.Settings
	Conditions []claimCond
	Mutants    []claimMutant
	Processes  []ProcessView
	Lines      []claimObsView
}

type claimCond struct {
	Name               string
	Expected, Observed any
	Pass               bool
}

type claimMutant struct {
	Mutant             wc.Variant
	Killed             bool
	KilledBy, Survived []string
}

type claimObsView struct {
	Condition  string
	Variant    wc.Variant
	Round      string
	Repetition int
	Race       claim.Race
	Racers     int
	Outcome    claim.RaceOutcome
}

func deterministicClaim(f *Folder, s harness.ScenarioResult) (any, error) {
	st, err := claimSettings(s)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	ex, err := claimExtra(s)
	if err != nil {
		return nil, fmt.Errorf("extra: %w", err)
	}
	d := claimRun{Settings: st, Processes: processViews(f, s.Name)}
	sort.SliceStable(d.Processes, func(i, j int) bool {
		a, b := d.Processes[i], d.Processes[j]
		if a.Condition != b.Condition {
			return a.Condition < b.Condition
		}
		return a.Label < b.Label
	})
	for _, c := range s.Conditions {
		e, err1 := canon(c.Expected)
		o, err2 := canon(c.Observed)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("condition %s: not JSON", c.Name)
		}
		d.Conditions = append(d.Conditions, claimCond{Name: c.Name, Expected: e, Observed: o, Pass: c.Pass})
	}
	if ex.Mutants != nil {
		for _, r := range ex.Mutants.Rows {
			d.Mutants = append(d.Mutants, claimMutant{Mutant: r.Mutant, Killed: r.Killed, KilledBy: r.KilledBy, Survived: r.Survived})
		}
	}
	for _, l := range f.Observations {
		if l.Data["scenario"] != s.Name {
			continue
		}
		var o claim.Observation
		if err := decodeStrict(l.Data, &o); err != nil {
			return nil, fmt.Errorf("observation line %d: %w", l.N, err)
		}
		d.Lines = append(d.Lines, claimObsView{Condition: o.Condition, Variant: o.Variant, Round: o.Round, Repetition: o.Repetition, Race: o.Race, Racers: len(o.Racers), Outcome: o.Outcome})
	}
	return d, nil
}

// overridesClaim turns the recorded claim settings back into the
// experiment's flags.
func overridesClaim(s harness.ScenarioResult, o *suite.Options) error {
	st, err := claimSettings(s)
	if err != nil {
		return fmt.Errorf("claim settings: %w", err)
	}
	o.Claim = claim.Overrides{Workers: st.Workers, Repetitions: st.Repetitions, SkipMutants: !st.Mutants}
	if st.Mutants {
		o.Claim.MutantRepetitions = st.MutantRepetitions
	}
	return o.Claim.Validate()
}

// published003 is testdata/published/003.json.
type published003 struct {
	Article  string `json:"article"`
	Title    string `json:"title"`
	Source   string `json:"source"`
	Scenario string `json:"scenario"`
	Claims   []struct {
		Case       string `json:"case"`
		Winners    *int   `json:"winners,omitempty"`
		Downstream string `json:"downstream,omitempty"`
		Note       string `json:"note"`
	} `json:"claims"`
	Mutants       []string `json:"mutants"`
	MutantsKilled int      `json:"mutants_killed"`
}

// claimTarget is a race of a round condition that reproduces one of the
// article's cases.
type claimTarget struct {
	round string
	kind  wc.Variant
	race  string
}

// claimCases maps the article's cases, in its wording, to the rounds that
// reproduce them. This is the harness's reading of the article, kept here
// rather than in the published data.
var claimCases = map[string][]claimTarget{
	"racers at one moment":                                 {{"1-fresh", wc.Legacy, "A"}, {"1-fresh", wc.TTL, "A"}},
	"one-time claim (DO NOTHING) after the TTL expired":    {{"3-after-ttl", wc.Legacy, "B"}},
	"TTL upsert after the TTL expired":                     {{"3-after-ttl", wc.TTL, "B"}},
	"pre-migration row with claimed_at NULL":               {{"4-null-claimed-at", wc.TTL, "B"}},
	"old schema without claimed_at":                        {{"7-old-schema", wc.TTL, "A"}},
	"exactly at the TTL, with the article's <":             {{"5-at-boundary", wc.TTL, "B"}},
	"1 ms after the TTL":                                   {{"5-past-boundary", wc.TTL, "B"}},
	"within the TTL, caller timestamp 10 years ahead":      {{"6-forged-future", wc.TTL, "B"}},
	"after the TTL, caller timestamp 10 years behind":      {{"6-forged-past", wc.TTL, "B"}},
	"a re-claim after the TTL keeps the downstream fields": {{"8-reclaim-keeps-downstream", wc.TTL, "B"}},
}

// claimMutantNames maps the article's bugs, in its order, to the mutants.
var claimMutantNames = map[string]wc.Variant{
	"back to DO NOTHING":          wc.MutantDoNothing,
	"WHERE removed":               wc.MutantNoWhere,
	"NULL rows excluded":          wc.MutantNullExcluded,
	"< changed to <=":             wc.MutantBoundaryFlipped,
	"the client's timestamp used": wc.MutantCallerTime,
}

func articleClaim(pub []byte, s harness.ScenarioResult) (*ArticleSection, error) {
	var p published003
	if err := json.Unmarshal(pub, &p); err != nil {
		return nil, fmt.Errorf("decode published 003: %w", err)
	}
	a := &ArticleSection{ID: p.Article, Title: p.Title, Source: p.Source, Scenario: s.Name, Unit: "winners of a race in every repetition, and the mutants caught"}
	a.Table.Header = []string{"case (article's wording)", "reproduced by", "published", "reproduced"}
	groups := map[string][]claim.Group{}
	for _, c := range s.Conditions {
		var g []claim.Group
		if decodeStrict(c.Observed, &g) == nil {
			groups[c.Name] = g
		}
	}
	judge := func(cells []Cell, pubText, got string) {
		match := got == pubText
		a.Table.Rows = append(a.Table.Rows, append(cells, Cell{Text: pubText}, Cell{Text: got, Mark: harness.Mark(match)}))
		a.Cells++
		if match {
			a.Matches++
		}
	}
	for _, pc := range p.Claims {
		targets, ok := claimCases[pc.Case]
		if !ok {
			a.Notes = append(a.Notes, fmt.Sprintf("The article's case %q has no round here.", pc.Case))
			continue
		}
		for _, t := range targets {
			name := claim.RoundCondition(t.round, t.kind)
			by := []Cell{{Text: pc.Case}, {Text: name + " race " + t.race}}
			vals := raceValues(groups[name], t.race, func(o claim.RaceOutcome) string {
				if pc.Winners != nil {
					return winnersText(o.Winners)
				}
				if o.Row.ExternalID == "A:winner" && o.Row.Classification != claim.ValueNull {
					return "kept"
				}
				return fmt.Sprintf("overwritten (external_id %s, classification %s)", o.Row.ExternalID, o.Row.Classification)
			})
			pubText := pc.Downstream
			if pc.Winners != nil {
				pubText = winnersText(*pc.Winners)
			}
			judge(by, pubText, vals)
		}
	}
	var rows []claim.MutantRow
	if ex, err := claimExtra(s); err == nil && ex.Mutants != nil {
		rows = ex.Mutants.Rows
	}
	for _, bug := range p.Mutants {
		v, ok := claimMutantNames[bug]
		cells := []Cell{{Text: "mutation: " + bug}, {Text: string(v)}}
		if !ok {
			a.Notes = append(a.Notes, fmt.Sprintf("The article's mutation %q has no mutant here.", bug))
			continue
		}
		got := "not run"
		for _, r := range rows {
			if r.Mutant == v {
				got = "survived"
				if r.Killed {
					got = "caught"
				}
				cells[1].Text += " (killed by " + strings.Join(r.KilledBy, ", ") + ")"
			}
		}
		judge(cells, "caught", got)
	}
	a.Notes = append(a.Notes, "Winners are shown for every repetition: one value when all agree, every value seen otherwise. Rounds 5 and 6 follow the article's rules (its SQL's <, and the server's clock over the caller's timestamp).")
	return a, nil
}

func winnersText(n int) string {
	if n == 1 {
		return "1 winner"
	}
	return fmt.Sprintf("%d winners", n)
}

// raceValues renders one race's figure over every repetition.
func raceValues(gs []claim.Group, race string, f func(claim.RaceOutcome) string) string {
	var vals []string
	seen := map[string]bool{}
	for _, g := range gs {
		for _, o := range g.Outcome {
			if o.Race != race {
				continue
			}
			if v := f(o); !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
	}
	if len(vals) == 0 {
		return "not run"
	}
	return strings.Join(vals, " / ")
}

func cellClaim(v any) string {
	var gs []claim.Group
	if err := decodeStrict(v, &gs); err == nil && len(gs) > 0 {
		var parts []string
		for _, g := range gs {
			last := ""
			if n := len(g.Outcome); n > 0 {
				r := g.Outcome[n-1].Row
				last = fmt.Sprintf("; row count %d, claimed_at %s, external_id %s", r.Count, r.ClaimedAt, r.ExternalID)
			}
			parts = append(parts, fmt.Sprintf("winners %s%s (×%d)", claim.Winners(g.Outcome), last, len(g.Repetitions)))
		}
		return strings.Join(parts, " | ")
	}
	var mv claim.MutantVerdict
	if err := decodeStrict(v, &mv); err == nil {
		if mv.Killed {
			return "killed"
		}
		return "survived"
	}
	return compactLong(v)
}
