package review

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"idemlab/experiments/batch"
	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
)

func init() {
	register(batch.Name, plugin{
		article:       "002.json",
		check:         checkBatch,
		deterministic: deterministicBatch,
		overrides:     overridesBatch,
		articleTable:  articleBatch,
		cell:          cellBatch,
		charts:        chartsBatch,
	})
}

// batchSettings reads the recorded settings strictly: the oracle is
// recomputed from them, so a field the plug-in does not know is a finding.
func batchSettings(s harness.ScenarioResult) (batch.Settings, error) {
	var st batch.Settings
	if err := decodeStrict(s.Settings, &st); err != nil {
		return st, err
	}
	return st, st.Input.Validate()
}

func batchExtra(s harness.ScenarioResult) (batch.Extra, error) {
	var ex batch.Extra
	err := decodeStrict(s.Extra, &ex)
	return ex, err
}

// batchTrialObs is one trial's observation lines, decoded, in file order.
type batchTrialObs struct {
	lines []Line
	obs   []batch.Observation
}

// batchTrials groups a condition's observation lines by trial number.
func batchTrials(f *Folder, scenario, cond string, add func(file, fld, format string, args ...any)) map[int]*batchTrialObs {
	out := map[int]*batchTrialObs{}
	for _, l := range f.observationsOf(scenario, cond) {
		var o batch.Observation
		if err := decodeStrict(l.Data, &o); err != nil {
			add(harness.ObservationsFile, fmt.Sprintf("line %d", l.N), "not a batch observation: %v", err)
			continue
		}
		t := out[o.Trial]
		if t == nil {
			t = &batchTrialObs{}
			out[o.Trial] = t
		}
		t.lines, t.obs = append(t.lines, l), append(t.obs, o)
	}
	return out
}

// rebuildOutcome derives a trial's outcome from its observation lines the
// way the scenario derives it from the processes: runs and resolves in
// order, the receiver's final counters and the journal's final rows.
func rebuildOutcome(t *batchTrialObs) batch.Outcome {
	o := batch.Outcome{Runs: []batch.RunObs{}, Resolved: []batch.ResolveObs{}, JournalRows: map[string]int{}}
	usesJournal := false
	for _, x := range t.obs {
		if x.Run != nil {
			o.Runs = append(o.Runs, *x.Run)
			o.Steps = x.Run.ExecutedSteps
			usesJournal = usesJournal || x.Run.Mode == wb.ModeJournal
		}
		if x.Resolve != nil {
			o.Resolved = append(o.Resolved, *x.Resolve)
		}
	}
	if n := len(t.obs); n > 0 {
		last := t.obs[n-1]
		o.Duplicates, o.SentOnceItems, o.Accepts = last.Receiver.Duplicates, last.Receiver.SentOnceItems, last.Receiver.Accepts
		if usesJournal && last.Journal != nil {
			o.JournalRows = last.Journal.RowsByStatus
		}
	}
	return o
}

// checkBatch checks every condition three ways: expected against the oracle
// replayed from the recorded settings, observed against the observation
// lines trial by trial, and each line against its process and its own
// counters; then the timing table against the trials it summarises.
func checkBatch(f *Folder, s harness.ScenarioResult) []Finding {
	var out []Finding
	add := func(file, fld, format string, args ...any) {
		out = append(out, Finding{File: file, Field: fld, Message: fmt.Sprintf(format, args...)})
	}
	sbase := field("scenarios", key(s.Name))
	st, err := batchSettings(s)
	if err != nil {
		add(harness.ResultsFile, sbase+".settings", "cannot replay the oracle from the recorded settings: %v", err)
		return out
	}
	in := st.Input
	known := map[string]batch.Params{}
	var names []string
	for _, m := range in.Modes {
		for _, c := range batch.Conditions {
			n := batch.ConditionName(m, c)
			known[n] = batch.Params{Condition: c, Mode: m, Job: in.JobID, Items: in.Items, FailAt: in.FailAt}
			names = append(names, n)
		}
	}
	seen := map[string]bool{}
	observed := map[string][]batch.Outcome{}
	for _, cond := range s.Conditions {
		base := field("scenarios", key(s.Name), "conditions", key(cond.Name))
		seen[cond.Name] = true
		p, ok := known[cond.Name]
		if !ok {
			add(harness.ResultsFile, base+".name", "not a condition of scenario %s with modes %v", s.Name, in.Modes)
			continue
		}
		var exp, obs []batch.Outcome
		if err := decodeStrict(cond.Expected, &exp); err != nil {
			add(harness.ResultsFile, base+".expected", "not a list of batch outcomes: %v", err)
			continue
		}
		if err := decodeStrict(cond.Observed, &obs); err != nil {
			add(harness.ResultsFile, base+".observed", "not a list of batch outcomes: %v", err)
			continue
		}
		observed[cond.Name] = obs
		for _, d := range diffPaths(base+".expected", batch.Repeat(batch.Expect(p), in.Trials), exp) {
			add(harness.ResultsFile, d.Path, "the oracle computes %s, the file says %s", d.A, d.B)
		}
		if pass, _ := batch.Check(exp, obs); pass != cond.Pass {
			add(harness.ResultsFile, base+".pass", "is %v, but expected and observed %s", cond.Pass, map[bool]string{true: "agree", false: "differ"}[pass])
		}
		if len(obs) != in.Trials {
			add(harness.ResultsFile, base+".observed", "has %d trials, but settings.input.trials is %d", len(obs), in.Trials)
		}
		trials := batchTrials(f, s.Name, cond.Name, add)
		for n := range trials {
			if n < 1 || n > len(obs) {
				add(harness.ObservationsFile, fmt.Sprintf("line %d: trial", trials[n].lines[0].N), "%d, but %s has %d trials at %s.observed", n, harness.ResultsFile, len(obs), base)
			}
		}
		for i := range obs {
			t, ok := trials[i+1]
			if !ok {
				add(harness.ObservationsFile, "condition "+cond.Name, "no lines for trial %d, which %s lists at %s.observed[%d]", i+1, harness.ResultsFile, base, i)
				continue
			}
			for _, d := range diffPaths(fmt.Sprintf("%s.observed[%d]", base, i), normOutcome(obs[i]), rebuildOutcome(t)) {
				add(harness.ResultsFile, d.Path, "is %s, but %s lines %s say %s", d.A, harness.ObservationsFile, lineNumbers(t.lines), d.B)
			}
			checkBatchLines(f, p, i+1, t, add)
		}
	}
	for _, n := range names {
		if !seen[n] {
			add(harness.ResultsFile, sbase+".conditions", "condition %s is missing; every run records all %d", n, len(names))
		}
	}
	for _, l := range f.Observations {
		if l.Data["scenario"] != s.Name {
			continue
		}
		if c, _ := l.Data["condition"].(string); !seen[c] {
			add(harness.ObservationsFile, fmt.Sprintf("line %d: condition", l.N), "%q is not a condition of scenario %s in %s", c, s.Name, harness.ResultsFile)
		}
	}
	out = append(out, checkBatchTimings(s, in, observed)...)
	return out
}

// normOutcome gives nil lists and maps their empty JSON form, as the
// scenario's Check treats them (a crashed run reports neither).
func normOutcome(o batch.Outcome) batch.Outcome {
	if o.Runs == nil {
		o.Runs = []batch.RunObs{}
	}
	if o.Resolved == nil {
		o.Resolved = []batch.ResolveObs{}
	}
	if o.JournalRows == nil {
		o.JournalRows = map[string]int{}
	}
	return o
}

func lineNumbers(ls []Line) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, strconv.Itoa(l.N))
	}
	return strings.Join(parts, ",")
}

// checkBatchLines checks each line of one trial on its own: its step names
// the right run, the process it names ran that step with the exit code the
// line states, and the receiver's counters add up.
func checkBatchLines(f *Folder, p batch.Params, trial int, t *batchTrialObs, add func(file, fld, format string, args ...any)) {
	runs := 0
	for j, o := range t.obs {
		line := fmt.Sprintf("line %d", t.lines[j].N)
		if o.Mode != p.Mode {
			add(harness.ObservationsFile, line+": mode", "%q, but condition %s runs mode %q", o.Mode, o.Condition, p.Mode)
		}
		var wantStep, wantWorker string
		switch {
		case o.Run != nil && o.Resolve == nil:
			runs++
			if o.Run.Run != runs {
				add(harness.ObservationsFile, line+": run.run", "is %d, but it is run %d of trial %d", o.Run.Run, runs, trial)
			}
			wantStep, wantWorker = "run "+strconv.Itoa(o.Run.Run), batch.WorkerRun
		case o.Resolve != nil && o.Run == nil:
			wantStep, wantWorker = "resolve "+o.Resolve.Key, batch.WorkerResolve
		default:
			add(harness.ObservationsFile, line, "holds %s; a batch observation is either a run or a resolve", map[bool]string{true: "both a run and a resolve", false: "neither a run nor a resolve"}[o.Run != nil])
			continue
		}
		if o.Step != wantStep {
			add(harness.ObservationsFile, line+": step", "is %q, want %q", o.Step, wantStep)
		}
		rs := o.Receiver
		dups, once, accepts := 0, 0, 0
		for k, n := range rs.AcceptCounts {
			times, err := strconv.Atoi(k)
			if err != nil || times < 1 {
				add(harness.ObservationsFile, line+": receiver.accept_counts", "key %q is not a positive number of accepts", k)
				continue
			}
			dups += (times - 1) * n
			accepts += times * n
			if times == 1 {
				once += n
			}
		}
		if dups != rs.Duplicates || once != rs.SentOnceItems || accepts != rs.Accepts {
			add(harness.ObservationsFile, line+": receiver", "duplicates %d, sent_once_items %d, accepts %d, but accept_counts give %d, %d, %d", rs.Duplicates, rs.SentOnceItems, rs.Accepts, dups, once, accepts)
		}
		proc, pline, ok := f.process(o.ProcessID)
		if !ok {
			continue // the generic check reports it
		}
		pfield := func(name string) string { return fmt.Sprintf("line %d: %s", pline, name) }
		if proc.Worker != wantWorker {
			add(harness.ProcessesFile, pfield("worker"), "is %q, but observation %s is a %s by %q", proc.Worker, line, wantStep, wantWorker)
		}
		if want := fmt.Sprintf("trial %d %s", trial, wantStep); proc.Label != want {
			add(harness.ProcessesFile, pfield("label"), "is %q, but observation %s names it as %q", proc.Label, line, want)
		}
		if o.Run != nil {
			if proc.ExitCode != o.Run.ExitCode {
				add(harness.ObservationsFile, line+": run.exit_code", "%d, but process %d exited %d (%s line %d)", o.Run.ExitCode, o.ProcessID, proc.ExitCode, harness.ProcessesFile, pline)
			}
			crashed := o.Run.Status == batch.StatusCrashed
			if crashed != (proc.ExitCode == protocol.ExitCrash) {
				add(harness.ObservationsFile, line+": run.status", "%q, but process %d exited %d", o.Run.Status, o.ProcessID, proc.ExitCode)
			}
			if rep, err := harness.ParseReport(proc.Stdout); err == nil && rep.CrashedAt != o.Run.CrashedAt {
				add(harness.ObservationsFile, line+": run.crashed_at", "%q, but process %d reported crashing at %q", o.Run.CrashedAt, o.ProcessID, rep.CrashedAt)
			}
		} else if proc.ExitCode != protocol.ExitACK {
			add(harness.ProcessesFile, pfield("exit_code"), "%d, but resolve %s is recorded as done in %s %s", proc.ExitCode, o.Resolve.Key, harness.ObservationsFile, line)
		}
	}
}

// checkBatchTimings checks the timing table's shape and the one figure in
// it that is not measured: each trial's floor, the simulated latency of the
// steps the resume runs executed, follows from the observed counts.
func checkBatchTimings(s harness.ScenarioResult, in batch.Input, observed map[string][]batch.Outcome) []Finding {
	var out []Finding
	add := func(fld, format string, args ...any) {
		out = append(out, Finding{File: harness.ResultsFile, Field: fld, Message: fmt.Sprintf(format, args...)})
	}
	base := field("scenarios", key(s.Name), "extra")
	ex, err := batchExtra(s)
	if err != nil {
		add(base, "not the batch timing table: %v", err)
		return out
	}
	type ct struct{ mode, cond string }
	trials := map[ct][]batch.Timing{}
	for i, t := range ex.Trials {
		k := ct{t.Mode, t.Condition}
		trials[k] = append(trials[k], t)
		obs := observed[batch.ConditionName(t.Mode, t.Condition)]
		if t.Trial < 1 || t.Trial > len(obs) {
			add(fmt.Sprintf("%s.trials[%d].trial", base, i), "%d has no observed trial in condition %s", t.Trial, batch.ConditionName(t.Mode, t.Condition))
			continue
		}
		if want := floorMS(obs[t.Trial-1], in.LatencyMS); !near(t.FloorMS, want) {
			add(fmt.Sprintf("%s.trials[%d].floor_ms", base, i), "is %v, but the executed steps of the runs after run 1 times the latencies give %v", t.FloorMS, want)
		}
	}
	for i, sum := range ex.Timings {
		ts := trials[ct{sum.Mode, sum.Condition}]
		if len(ts) != in.Trials || len(sum.MS) != in.Trials {
			add(fmt.Sprintf("%s.timings[%d]", base, i), "%s/%s summarises %d figures over %d trials, but settings.input.trials is %d", sum.Mode, sum.Condition, len(sum.MS), len(ts), in.Trials)
			continue
		}
		for j, t := range ts {
			if !near(sum.MS[j], t.MS) {
				add(fmt.Sprintf("%s.timings[%d].ms[%d]", base, i, j), "is %v, but trial %d measured %v", sum.MS[j], t.Trial, t.MS)
			}
		}
	}
	if want := len(in.Modes) * len(batch.Conditions); len(ex.Timings) != want {
		add(base+".timings", "has %d rows, want one per mode and condition (%d)", len(ex.Timings), want)
	}
	return out
}

func floorMS(o batch.Outcome, lat batch.Latency) float64 {
	f := 0.0
	for i, r := range o.Runs {
		if i == 0 {
			continue
		}
		e := r.ExecutedByStep
		f += float64(e[wb.StepValidate])*lat.Validate + float64(e[wb.StepTransform])*lat.Transform + float64(e[wb.StepNotify])*lat.Send
	}
	return f
}

// near compares figures rounded to two decimals when they were written.
func near(a, b float64) bool { return math.Abs(a-b) < 0.006 }

// batchRun is what a rerun of the batch scenario must reproduce: every
// count, status, held item and exit code, but no time and no port.
type batchRun struct {
	Input      batch.Input
	Conditions []batchCond
	Processes  []ProcessView
	Lines      []batchLine
	// TimedTrials counts the timing rows per mode/condition; the times
	// themselves are measurements.
	TimedTrials map[string]int
}

type batchCond struct {
	Name               string
	Expected, Observed []batch.Outcome
	Pass               bool
}

type batchLine struct {
	Condition string
	Trial     int
	Step      string
	Run       *batch.RunObs
	Resolve   *batch.ResolveObs
	Journal   *batch.JournalState
	Receiver  batch.ReceiverStats
}

func deterministicBatch(f *Folder, s harness.ScenarioResult) (any, error) {
	st, err := batchSettings(s)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	d := batchRun{Input: st.Input, Processes: processViews(f, s.Name), TimedTrials: map[string]int{}}
	for _, c := range s.Conditions {
		bc := batchCond{Name: c.Name, Pass: c.Pass}
		if err := decodeStrict(c.Expected, &bc.Expected); err != nil {
			return nil, fmt.Errorf("condition %s expected: %w", c.Name, err)
		}
		if err := decodeStrict(c.Observed, &bc.Observed); err != nil {
			return nil, fmt.Errorf("condition %s observed: %w", c.Name, err)
		}
		for i := range bc.Observed {
			bc.Observed[i] = normOutcome(bc.Observed[i])
		}
		d.Conditions = append(d.Conditions, bc)
	}
	for _, l := range f.Observations {
		if l.Data["scenario"] != s.Name {
			continue
		}
		var o batch.Observation
		if err := decodeStrict(l.Data, &o); err != nil {
			return nil, fmt.Errorf("observation line %d: %w", l.N, err)
		}
		d.Lines = append(d.Lines, batchLine{
			Condition: o.Condition, Trial: o.Trial, Step: o.Step, Run: o.Run, Resolve: o.Resolve, Journal: o.Journal,
			Receiver: o.Receiver,
		})
	}
	ex, err := batchExtra(s)
	if err != nil {
		return nil, fmt.Errorf("extra: %w", err)
	}
	for _, t := range ex.Trials {
		d.TimedTrials[batch.ConditionName(t.Mode, t.Condition)]++
	}
	return d, nil
}

// overridesBatch turns the recorded batch input back into the experiment
// flags, so a folder made with --items, --fail-at, --trials or --mode
// reruns with them.
func overridesBatch(s harness.ScenarioResult, o *suite.Options) error {
	st, err := batchSettings(s)
	if err != nil {
		return fmt.Errorf("batch settings: %w", err)
	}
	in := st.Input
	o.Batch = batch.Overrides{Items: &in.Items, FailAt: &in.FailAt, Trials: &in.Trials, Modes: append([]string{}, in.Modes...)}
	return nil
}

// published002 is testdata/published/002.json.
type published002 struct {
	Article    string `json:"article"`
	Title      string `json:"title"`
	Source     string `json:"source"`
	Scenario   string `json:"scenario"`
	Items      int    `json:"items"`
	FailAtItem int    `json:"fail_at_item"`
	Modes      map[string]struct {
		RerunAll struct {
			Run2Steps  int `json:"run2_steps"`
			Duplicates int `json:"duplicates"`
		} `json:"rerun_all"`
		Journal struct {
			Run2Executed int      `json:"run2_executed"`
			Run2Skipped  int      `json:"run2_skipped"`
			Run2Held     []string `json:"run2_held"`
			Run2Status   string   `json:"run2_status"`
			Run3Executed int      `json:"run3_executed"`
			Duplicates   int      `json:"duplicates"`
			Once         int      `json:"delivered_exactly_once"`
		} `json:"journal"`
	} `json:"modes"`
	Timings struct {
		Platform string                        `json:"platform"`
		Trials   int                           `json:"trials"`
		ByMode   map[string]map[string]float64 `json:"-"`
	} `json:"timings_ms"`
}

// publishedTimings reads timings_ms leniently: its keys are modes beside
// platform and trials.
func publishedTimings(pub []byte) map[string]map[string]float64 {
	var raw struct {
		T map[string]json.RawMessage `json:"timings_ms"`
	}
	out := map[string]map[string]float64{}
	if json.Unmarshal(pub, &raw) != nil {
		return out
	}
	for k, v := range raw.T {
		var m map[string]float64
		if json.Unmarshal(v, &m) == nil {
			out[k] = m
		}
	}
	return out
}

// distinct renders one figure over every trial: one value when the trials
// agree, all of them joined with " / " when they do not.
func distinct(obs []batch.Outcome, f func(batch.Outcome) string) string {
	var vals []string
	seen := map[string]bool{}
	for _, o := range obs {
		v := f(o)
		if !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return "not run"
	}
	return strings.Join(vals, " / ")
}

func runField(n int, f func(batch.RunObs) string) func(batch.Outcome) string {
	return func(o batch.Outcome) string {
		if n >= len(o.Runs) {
			return "no run " + strconv.Itoa(n+1)
		}
		return f(o.Runs[n])
	}
}

func heldText(h []string) string {
	if len(h) == 0 {
		return "none"
	}
	return strings.Join(h, ", ")
}

func articleBatch(pub []byte, s harness.ScenarioResult) (*ArticleSection, error) {
	var p published002
	if err := json.Unmarshal(pub, &p); err != nil {
		return nil, fmt.Errorf("decode published 002: %w", err)
	}
	a := &ArticleSection{ID: p.Article, Title: p.Title, Source: p.Source, Scenario: s.Name, Unit: "steps, items and statuses of every trial (timings are shown, not judged)"}
	a.Table.Header = []string{"mode", "figure", "published", "reproduced"}
	observed := map[string][]batch.Outcome{}
	for _, c := range s.Conditions {
		var obs []batch.Outcome
		if decodeStrict(c.Observed, &obs) == nil {
			observed[c.Name] = obs
		}
	}
	st, _ := batchSettings(s)
	if st.Input.Items != p.Items || st.Input.FailAt != p.FailAtItem {
		a.Notes = append(a.Notes, fmt.Sprintf("This run used %d items failing at item %d; the article's counts are for %d items failing at item %d, so cells that depend on them cannot match.", st.Input.Items, st.Input.FailAt, p.Items, p.FailAtItem))
	}
	judge := func(mode, fig, pubText, got string) {
		match := got == pubText
		a.Table.Rows = append(a.Table.Rows, []Cell{{Text: mode}, {Text: fig}, {Text: pubText}, {Text: got, Mark: harness.Mark(match)}})
		a.Cells++
		if match {
			a.Matches++
		}
	}
	itoa := strconv.Itoa
	var modes []string
	for m := range p.Modes {
		modes = append(modes, m)
	}
	// The article's order: before_accept first.
	sort.Slice(modes, func(i, j int) bool { return modeRank(modes[i]) < modeRank(modes[j]) })
	timings := publishedTimings(pub)
	ex, _ := batchExtra(s)
	for _, m := range modes {
		pm := p.Modes[m]
		rerun := observed[batch.ConditionName(m, batch.CondRerunAll)]
		jour := observed[batch.ConditionName(m, batch.CondJournal)]
		judge(m, "rerun all: run 2 steps", itoa(pm.RerunAll.Run2Steps), distinct(rerun, runField(1, func(r batch.RunObs) string { return itoa(r.ExecutedSteps) })))
		judge(m, "rerun all: duplicates", itoa(pm.RerunAll.Duplicates), distinct(rerun, func(o batch.Outcome) string { return itoa(o.Duplicates) }))
		judge(m, "journal: run 2 executed", itoa(pm.Journal.Run2Executed), distinct(jour, runField(1, func(r batch.RunObs) string { return itoa(r.ExecutedSteps) })))
		judge(m, "journal: run 2 skipped", itoa(pm.Journal.Run2Skipped), distinct(jour, runField(1, func(r batch.RunObs) string { return itoa(r.SkippedSteps) })))
		judge(m, "journal: run 2 held", heldText(pm.Journal.Run2Held), distinct(jour, runField(1, func(r batch.RunObs) string { return heldText(r.Held) })))
		judge(m, "journal: run 2 status", pm.Journal.Run2Status, distinct(jour, runField(1, func(r batch.RunObs) string { return r.Status })))
		judge(m, "journal: run 3 executed", itoa(pm.Journal.Run3Executed), distinct(jour, runField(2, func(r batch.RunObs) string { return itoa(r.ExecutedSteps) })))
		judge(m, "journal: duplicates", itoa(pm.Journal.Duplicates), distinct(jour, func(o batch.Outcome) string { return itoa(o.Duplicates) }))
		judge(m, "journal: items delivered exactly once", itoa(pm.Journal.Once), distinct(jour, func(o batch.Outcome) string { return itoa(o.SentOnceItems) }))
		pt := timings[m]
		for _, tc := range []struct{ fig, pubKey, cond string }{
			{"rerun all, avg ms", "rerun_all_avg", batch.CondRerunAll},
			{"journal runs 2+3, avg ms", "journal_runs_2_3_avg", batch.CondJournal},
		} {
			pubText := "not published"
			if v, ok := pt[tc.pubKey]; ok {
				pubText = fmt.Sprintf("%.2f (%s, %d trials)", v, p.Timings.Platform, p.Timings.Trials)
			}
			got := "not run"
			for _, t := range ex.Timings {
				if t.Mode == m && t.Condition == tc.cond {
					got = fmt.Sprintf("%.2f (floor %.2f, %d trials)", t.AvgMS, t.FloorMS, len(t.MS))
				}
			}
			a.Table.Rows = append(a.Table.Rows, []Cell{{Text: m}, {Text: tc.fig}, {Text: pubText}, {Text: got}})
		}
	}
	a.Notes = append(a.Notes, "Timings are shown side by side but not judged: the article measured on another machine, and the checks of a run are its counts. The floor is the simulated latency of the steps the resume runs executed.")
	for _, m := range st.Input.Modes {
		if _, ok := p.Modes[m]; !ok {
			a.Notes = append(a.Notes, fmt.Sprintf("Mode %s is run here but not in the article.", m))
		}
	}
	return a, nil
}

func modeRank(m string) int {
	for i, x := range batch.Modes {
		if x == m {
			return i
		}
	}
	return len(batch.Modes)
}

func cellBatch(v any) string {
	var outs []batch.Outcome
	if err := decodeStrict(v, &outs); err != nil {
		return compactLong(v)
	}
	if len(outs) == 0 {
		return "no trials"
	}
	return fmt.Sprintf("%s (%d trials)", distinct(outs, func(o batch.Outcome) string {
		var runs []string
		for _, r := range o.Runs {
			runs = append(runs, fmt.Sprintf("run %d: %s", r.Run, runText(r)))
		}
		return fmt.Sprintf("%s; held %s; dup %d; once %d", strings.Join(runs, "; "), heldText(batch.AllHeld(o.Runs)), o.Duplicates, o.SentOnceItems)
	}), len(outs))
}

func runText(r batch.RunObs) string {
	if r.Status == batch.StatusCrashed {
		return fmt.Sprintf("crashed (%d)", r.ExitCode)
	}
	s := fmt.Sprintf("%d run/%d skipped %s", r.ExecutedSteps, r.SkippedSteps, r.Status)
	if r.ExitCode != 0 {
		s += fmt.Sprintf(" (%d)", r.ExitCode)
	}
	return s
}

// batchTiming is one entry of the batch scenario's extra.timings, read
// leniently so that added fields do not break the chart.
type batchTiming struct {
	Mode      string    `json:"mode"`
	Condition string    `json:"condition"`
	MS        []float64 `json:"ms"`
	FloorMS   float64   `json:"floor_ms"`
}

func chartsBatch(_ *Folder, s harness.ScenarioResult) ([]Chart, error) {
	b, err := json.Marshal(s.Extra)
	if err != nil {
		return nil, err
	}
	var extra struct {
		Timings []batchTiming `json:"timings"`
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		return nil, fmt.Errorf("read extra.timings: %w", err)
	}
	byMode := map[string][]batchTiming{}
	var modes []string
	for _, t := range extra.Timings {
		if t.Condition != batch.CondRerunAll && t.Condition != batch.CondJournal {
			continue
		}
		if _, ok := byMode[t.Mode]; !ok {
			modes = append(modes, t.Mode)
		}
		byMode[t.Mode] = append(byMode[t.Mode], t)
	}
	sort.Strings(modes)
	var charts []Chart
	for _, m := range modes {
		var series []XYSeries
		for _, t := range byMode[m] {
			var xs, floor []float64
			for i := range t.MS {
				xs = append(xs, float64(i+1))
				floor = append(floor, t.FloorMS)
			}
			series = append(series,
				XYSeries{Name: t.Condition + " (measured)", X: xs, Y: t.MS},
				XYSeries{Name: t.Condition + " floor (simulated latency)", X: xs, Y: floor, Dashed: true})
		}
		svg, err := lineChart("batch "+m+": resume time per trial vs simulated floor", "trial", "ms", series)
		if err != nil {
			return charts, err
		}
		charts = append(charts, Chart{
			Title: "Batch timings, " + m, Slug: "batch-timings-" + m, SVG: svg,
			Caption: "Wall time of the resume runs in each trial (rerun all: run 2; journal: runs 2 and 3), against the sum of the simulated step latencies they had to wait for. Timings are data, not a pass/fail check.",
		})
	}
	return charts, nil
}
