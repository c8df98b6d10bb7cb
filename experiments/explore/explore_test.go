package explore

import (
	"context"
	"encoding/json"
	"idemlab/experiments/subject/deliver"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/experiments/subject/builtin"
	"idemlab/worker"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

func TestMain(m *testing.M) { worker.TestMain(withBroker{m}, breaks) }

// section is small: 4 random trials per pattern and one round of 2
// racers, about 40 processes.
const section = `{"event_id": "e-1", "job_key": "k-1", "seed": 3, "trials": 4, "racers": [2], "rounds": 1, "parallel": 2, "max_attempts": 3, "items": 2}`

func TestPlanRefusesBadInput(t *testing.T) {
	tests := []struct {
		section   string
		overrides map[string]string
		want      string
	}{
		{`{"event_id": "", "job_key": "k", "parallel": 1, "max_attempts": 1, "items": 2}`, nil, "explore.event_id: must not be empty"},
		{`{"event_id": "e", "job_key": "k", "parallel": -1, "max_attempts": 1}`, nil, "explore.parallel: -1"},
		{`{"event_id": "e", "job_key": "k", "parallel": 65, "max_attempts": 1}`, nil, "explore.parallel: 65"},
		{`{"event_id": "e", "job_key": "k", "parallel": 1, "max_attempts": 1, "items": 2, "racers": [1]}`, nil, "explore.racers[0]: 1, want 2 to"},
		{`{"event_id": "e", "job_key": "k", "parallel": 1, "max_attempts": 1, "items": 2, "racers": [2, 2]}`, nil, "explore.racers[1]: 2 is listed twice"},
		{`{"event_id": "e", "job_key": "k", "parallel": 1, "max_attempts": 1, "items": 2, "trails": 3}`, nil, "explore.trails: unknown field"},
		{`{"event_id": "e", "job_key": "k", "parallel": 1, "max_attempts": 1, "items": 2, "seed": -1}`, nil, "explore.seed: got JSON number"},
		{section, map[string]string{"trials": "-2"}, "--trials -2"},
		{section, map[string]string{"seed": "x"}, `--seed "x"`},
		{section, map[string]string{"only-trial": "a"}, `--only-trial "a"`},
		{``, nil, "explore: section is missing"},
	}
	for _, tt := range tests {
		_, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(tt.section), Overrides: tt.overrides})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%s, %v) = %v, want an error containing %q", tt.section, tt.overrides, err, tt.want)
		}
	}
	p, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: map[string]string{"trials": "10", "seed": "99", "only-trial": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	if st.Trials != 10 || st.Seed != 99 || st.OnlyTrial != 0 || st.HitTrials != 5 || st.KillTrials != 5 || st.Articles != nil {
		t.Errorf("overrides not applied: %+v", st)
	}
	// --trials 10 gives the built-in subjects (12 per 100) one
	// crash-after-hits and one kill trial each: trial 0. No built-in
	// subject races on SQLite, and the article files, whose trials replay
	// with the pattern scenario, are left out.
	var names []string
	for _, c := range st.Conditions {
		if c.Kind != KindDiscovery {
			names = append(names, c.Name)
			if !cmp.Equal(c.Trials, []int{0}) {
				t.Errorf("%s runs trials %v with --only-trial 0", c.Name, c.Trials)
			}
		}
	}
	var want []string
	for _, p := range BuiltIn() {
		want = append(want, p.Name+"/"+KindHits, p.Name+"/"+KindKill)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("conditions with --only-trial 0 (-want +got):\n%s", diff)
	}
}

// TestOnlyTrialOutsideThePlan: an index no random condition has would run
// nothing, so it is refused with the range there is.
func TestOnlyTrialOutsideThePlan(t *testing.T) {
	tests := []struct {
		overrides map[string]string
		want      string
	}{
		{map[string]string{"only-trial": "100000"}, "--only-trial 100000: --trials 4 and --rounds 1 give random trials 0 to 0"},
		{map[string]string{"only-trial": "5", "trials": "10"}, "--only-trial 5: --trials 10 and --rounds 1 give random trials 0 to 0"},
		{map[string]string{"only-trial": "0", "trials": "0", "rounds": "0"}, "--only-trial 0: --trials 0 and --rounds 0 give no random trial to run"},
	}
	for _, tt := range tests {
		_, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: tt.overrides})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Plan(%v) = %v, want %q", tt.overrides, err, tt.want)
		}
	}
	for _, ok := range []string{"0"} {
		if _, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: map[string]string{"only-trial": ok}}); err != nil {
			t.Errorf("--only-trial %s: %v", ok, err)
		}
	}
}

// shared is one real run, reused by every test that reads its records:
// each run starts a few hundred workers, which under the race detector
// costs about a minute.
var shared struct {
	sync.Mutex
	out *scenariotest.Outcome
}

func run(t *testing.T) scenariotest.Outcome {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.out == nil {
		out := scenariotest.Run(t, scenario.Define[Settings, Extra](formatSix{}), section, nil)
		if len(out.Findings) > 0 {
			t.Fatalf("a fresh run has findings: %v", out.Findings)
		}
		shared.out = &out
	}
	return *shared.out
}

// formatSix is explore as it planned up to format 6: the hand-written
// article workers beside the built-in subjects, and no article file. The
// fold still reads such a folder, so its checks run on one real run of it.
type formatSix struct{ Scenario }

func (formatSix) Plan(_ context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	p, err := Scenario{}.planSQLite(req.Section, req.Overrides)
	if err != nil {
		return nil, err
	}
	st := p.s
	in := Input{EventID: st.EventID, JobKey: st.JobKey, Seed: st.Seed, Trials: st.Trials, Racers: st.Racers, Rounds: st.Rounds, Parallel: st.Parallel, MaxAttempts: st.MaxAttempts, Items: st.Items}
	p.s = newSettings(in, st.OnlyTrial, Patterns())
	p.s.Shard = st.Shard
	if !req.Backend.IsSQLite() {
		p.s = postgresSettings(p.s, req.Backend, req.Backend.Levels())
	}
	return p, nil
}

// TestArticlesRunFromFiles: a run puts the article pattern files through
// the pattern scenario's subject and oracle beside the built-in subjects,
// and each file's verdict per class is its known_unsafe's: separate
// commits and claim-do-nothing break under points, random and
// concurrent, the single transaction and the TTL claim under none. A
// race breaks separate commits in a few rounds of a hundred, and more
// often with crashing racers: six rounds of each per K, as explore's
// input runs, break them in every run we have seen.
func TestArticlesRunFromFiles(t *testing.T) {
	const sec = `{"event_id": "e-1", "job_key": "k-1", "seed": 3, "trials": 6, "racers": [2, 4, 8], "rounds": 6, "parallel": 2, "max_attempts": 3, "items": 1}`
	out := scenariotest.Run(t, New(sourceArticles(t)), sec, nil)
	if len(out.Findings) > 0 {
		t.Fatalf("findings %v", out.Findings)
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s fails: %+v", c.Name, c.Differences)
		}
	}
	got := map[string]bool{}
	for _, c := range out.Result.Conditions {
		var e Expected
		decode(t, c.Expected, &e)
		if e.Kind != KindFile {
			continue
		}
		var o struct {
			Violated bool `json:"violated"`
		}
		decode(t, c.Observed, &o)
		got[c.Name] = o.Violated
	}
	want := map[string]bool{}
	for _, p := range Articles {
		unsafe := p == "separate-commit" || p == "claim-do-nothing"
		want[p+"/none"] = false
		for _, f := range ArticleFaults {
			want[p+"/"+f] = unsafe
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violated per condition (-want +got):\n%s", diff)
	}
	var st Settings
	decode(t, out.Settings, &st)
	for _, p := range st.Patterns {
		if slices.Contains(Articles, p.Name) && p.Name != "claim-ttl" {
			t.Errorf("pattern %s runs as a built-in subject beside its file", p.Name)
		}
	}
}

// TestRunRealProcesses sweeps, crashes, kills and races real workers on
// real files, and checks the sweep's window and the single transaction's
// invariants.
func TestRunRealProcesses(t *testing.T) {
	out := run(t)
	if !out.Result.Pass {
		t.Fatalf("run failed: %+v", out.Result.Conditions)
	}
	obs := map[string]json.RawMessage{}
	for _, c := range out.Result.Conditions {
		obs[c.Name] = c.Observed
	}
	var sep, single deliver.SweepObserved
	decode(t, obs["separate-commit/sweep"], &sep)
	decode(t, obs["single-transaction/sweep"], &single)
	if diff := cmp.Diff([]string{wr.PointAfterJobCommit}, sep.ViolatingPoints); diff != "" {
		t.Errorf("separate-commit violating points (-want +got):\n%s", diff)
	}
	if len(single.Points) < 3 || len(single.ViolatingPoints) != 0 {
		t.Errorf("single-transaction sweep: %+v", single)
	}
	var extra Extra
	if err := json.Unmarshal(out.Result.Extra, &extra); err != nil {
		t.Fatal(err)
	}
	for _, v := range extra.Violations {
		if v.Replay == "" || (v.Pattern != string(wr.SeparateCommit) && v.Pattern != "batch-rerun-all" && v.Condition != "lease-batch/takeover-unfenced") {
			t.Errorf("violation %+v: only separate commits, rerun-all and the unfenced takeover may violate, and each names its replay", v)
		}
	}
	var journal, rerun deliver.SweepObserved
	decode(t, obs["batch-journal/sweep"], &journal)
	decode(t, obs["batch-rerun-all/sweep"], &rerun)
	wantPoints := []string{"before-send:item-001", "after-send-accepted:item-001", "before-send:item-002", "after-send-accepted:item-002"}
	if diff := cmp.Diff(wantPoints, journal.Points); diff != "" || len(journal.ViolatingPoints) != 0 {
		t.Errorf("journal sweep violates at %v; points (-want +got):\n%s", journal.ViolatingPoints, diff)
	}
	if diff := cmp.Diff(wantPoints[1:], rerun.ViolatingPoints); diff != "" {
		t.Errorf("rerun-all violating points (-want +got):\n%s", diff)
	}
	var fenced, unfenced deliver.TakeoverObserved
	decode(t, obs["lease-batch/takeover-fenced"], &fenced)
	decode(t, obs["lease-batch/takeover-unfenced"], &unfenced)
	// The takeover tries the lease's acquisition, then the window, the
	// journal's points; the oracle's rule gives what the fenced takeover
	// records over the window.
	lost, refused := builtin.FencedTakeover(wantPoints)
	if diff := cmp.Diff(wantPoints, fenced.Points[min(1, len(fenced.Points)):]); diff != "" || len(fenced.ViolatingPoints) != 0 || fenced.LeaseLost != lost || fenced.StaleRefused != refused || lost == 0 || refused == 0 {
		t.Errorf("fenced takeover %+v, want %d leases lost and %d sends refused; points (-want +got):\n%s", fenced, lost, refused, diff)
	}
	if diff := cmp.Diff(wantPoints, unfenced.ViolatingPoints); diff != "" || unfenced.LeaseLost != 0 || unfenced.StaleRefused != 0 {
		t.Errorf("unfenced takeover %+v; violating points (-want +got):\n%s", unfenced, diff)
	}
	// The matrix's rows are every point some sweep tried, once each.
	var points []string
	for _, c := range out.Result.Conditions {
		if strings.HasSuffix(c.Name, "/sweep") {
			var o deliver.SweepObserved
			decode(t, c.Observed, &o)
			for _, p := range o.Points {
				if !slices.Contains(points, p) {
					points = append(points, p)
				}
			}
		}
	}
	m, err := SweepMatrix(out.Result)
	if err != nil || len(m.Patterns) != len(Patterns()) || len(m.Cells) != len(points) {
		t.Errorf("matrix %+v (%v), want %d patterns and a row per point", m, err, len(Patterns()))
	}
	if diff := cmp.Diff(points, m.Points); diff != "" || len(points) <= len(sep.Points)+len(single.Points) {
		t.Errorf("matrix points (-want +got):\n%s", diff)
	}
	sec, err := New(sourceArticles(t)).Report(out.Result)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Verdict != scenario.VerdictMatches || len(sec.Lead) < 2 || !strings.HasPrefix(sec.Lead[1].Text, "separate-commit breaks one-job: a crash at "+wr.PointAfterJobCommit) {
		t.Errorf("verdict %q, lead %+v: want the model matched and separate commits leading the violations", sec.Verdict, sec.Lead)
	}
	if len(sec.Replays) == 0 || !cmp.Equal(sec.Replays[0].Args, ReplayArgs(Settings{}, extra.Violations[0])) {
		t.Errorf("replays %+v, want the first violation's first", sec.Replays)
	}
	for _, tb := range sec.Tables {
		for _, r := range tb.Rows {
			if w := len([]rune(strings.Join(r, "  "))); w > 100 {
				t.Errorf("%s: row %q is %d columns wide", tb.Title, r, w)
			}
		}
	}
}

// wrongAllowed is explore with an oracle that allows only an outcome that
// never happens wherever the oracle names an allowed set.
type wrongAllowed struct{ Scenario }

func (w wrongAllowed) Expect(st Settings) ([]scenario.Expected, error) {
	exp, err := w.Scenario.Expect(st)
	for i := range exp {
		if e := exp[i].Value.(Expected); e.Allowed != nil {
			e.Allowed = []string{"duplicate-9"}
			exp[i].Value = e
		}
	}
	return exp, err
}

// TestWrongAllowedSetFails: an allowed set that leaves out what happens
// fails the conditions, through the same Evaluate.
func TestWrongAllowedSetFails(t *testing.T) {
	out := run(t)
	res := scenario.Evaluate(scenario.Define[Settings, Extra](wrongAllowed{}), nil, out.Settings, out.Records)
	findings := res.AllFindings()
	if len(findings) > 0 {
		t.Fatalf("findings: %v", findings)
	}
	for _, c := range res.Conditions {
		hasAllowed := !strings.HasSuffix(c.Name, "/sweep") && !strings.HasSuffix(c.Name, "/discovery") && !strings.Contains(c.Name, "/takeover")
		if hasAllowed == c.Pass {
			t.Errorf("%s: pass %v with a wrong allowed set", c.Name, c.Pass)
		}
	}
}

// find returns the index of the observation of a condition's trial step.
func findObs(tb testing.TB, rec results.Records, cond string, trial int, step string) int {
	tb.Helper()
	for i, l := range rec.Observations {
		// The head alone: the article files' lines, run side by side
		// with the built-in patterns', are the pattern scenario's shape.
		var o struct {
			Condition string `json:"condition"`
			Trial     int    `json:"trial"`
			Step      string `json:"step"`
		}
		decode(tb, l.Raw, &o)
		if o.Condition == cond && o.Trial == trial && o.Step == step {
			return i
		}
	}
	tb.Fatalf("no observation %s trial %d %s", cond, trial, step)
	return -1
}

func findProc(tb testing.TB, rec results.Records, cond, label string) int {
	tb.Helper()
	for i, p := range rec.Processes {
		if p.Condition == cond && p.Label == label {
			return i
		}
	}
	tb.Fatalf("no process %s %s", cond, label)
	return -1
}

// TestFoldCatchesTampering edits one field of one line at a time; each
// edit must give a finding naming the file.
func TestFoldCatchesTampering(t *testing.T) {
	out := run(t)
	rec := out.Records
	const sweep, hits, kill = "separate-commit/sweep", "separate-commit/crash-after-hits", "single-transaction/timing-kill"
	tests := []struct {
		name  string
		obs   bool
		index int
		edit  func(m map[string]any)
		file  string
	}{
		{"sweep point", true, findObs(t, rec, sweep, 1, StepDelivery), func(m map[string]any) { m["point"] = wr.PointAfterJobInsert }, "observations.jsonl"},
		{"k", true, findObs(t, rec, hits, 0, StepDelivery), func(m map[string]any) { m["k"] = 99 }, "observations.jsonl"},
		{"kill delay", true, findObs(t, rec, kill, 0, StepDelivery), func(m map[string]any) { m["kill_delays_us"] = []int{1} }, "observations.jsonl"},
		{"foreign job row", true, findObs(t, rec, sweep, 0, StepRecovery), func(m map[string]any) {
			m["rows"].(map[string]any)[builtin.TableJobs] = []string{"other|k"}
		}, "observations.jsonl"},
		{"job added by hand", true, findObs(t, rec, sweep, 0, StepRecovery), func(m map[string]any) {
			m["rows"].(map[string]any)[builtin.TableJobs] = []string{"e-1|k-1", "e-1|k-1"}
		}, "raw-processes.jsonl"},
		{"step name", true, findObs(t, rec, sweep, 2, StepRecovery), func(m map[string]any) { m["step"] = StepDelivery }, "observations.jsonl"},
		{"trial number", true, findObs(t, rec, hits, 1, StepRecovery), func(m map[string]any) { m["trial"] = 50 }, "observations.jsonl"},
		{"process id", true, findObs(t, rec, sweep, 0, StepRecovery), func(m map[string]any) { m["process_ids"] = []int{1} }, "raw-processes.jsonl"},
		{"crash env", false, findProc(t, rec, hits, "trial 000000 delivery"), func(m map[string]any) {
			m["env"] = map[string]string{protocol.EnvCrashAfterHits: "1000"}
		}, "raw-processes.jsonl"},
		{"exit code", false, findProc(t, rec, sweep, "trial 000001 delivery"), func(m map[string]any) { m["exit_code"] = 0 }, "raw-processes.jsonl"},
		{"argv pattern", false, findProc(t, rec, sweep, "trial 000000 recovery"), func(m map[string]any) {
			a := m["argv"].([]any)
			for i, x := range a {
				if x == string(wr.SeparateCommit) {
					a[i] = string(wr.SingleTransaction)
				}
			}
		}, "raw-processes.jsonl"},
		{"killed by harness unscheduled", false, findProc(t, rec, sweep, "trial 000000 recovery"), func(m map[string]any) { m["killed_by"] = "harness" }, "raw-processes.jsonl"},
		{"label", false, findProc(t, rec, hits, "trial 000001 recovery"), func(m map[string]any) { m["label"] = "trial 000009 recovery" }, "raw-processes.jsonl"},
		{"discovered points", false, findProc(t, rec, "separate-commit/discovery", "trial 000000 delivery"), func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"`+wr.PointAfterJobInsert+`",`, "", 1)
		}, "observations.jsonl"},
		{"lookup answer", true, findObs(t, rec, "batch-journal/sweep", 1, "resolve k-1:item-001:notify_external"), func(m map[string]any) {
			m["lookup"].(map[string]any)["found"] = false
		}, "observations.jsonl"},
		{"send dropped from the receiver log", true, findObs(t, rec, "batch-rerun-all/sweep", 1, StepRecovery), func(m map[string]any) {
			r := m["rows"].(map[string]any)
			l := r[builtin.TableSends].([]any)
			r[builtin.TableSends] = l[:len(l)-1]
		}, "raw-processes.jsonl"},
		{"takeover pause point", true, findObs(t, rec, "lease-batch/takeover-unfenced", 1, StepSuccessor), func(m map[string]any) { m["point"] = "lease-acquired" }, "observations.jsonl"},
		{"fence turned off in the argv", false, findProc(t, rec, "lease-batch/takeover-fenced", "trial 000001 stale-holder"), func(m map[string]any) {
			a := m["argv"].([]any)
			for i, x := range a {
				if x == "-fence=true" {
					a[i] = "-fence=false"
				}
			}
		}, "raw-processes.jsonl"},
		{"claim won by hand", true, findObs(t, rec, "claim-ttl/sweep", 1, builtin.StepProbe), func(m map[string]any) {
			r := m["rows"].(map[string]any)
			r[builtin.TableClaims] = []string{"e-1|2|1|k-1|ext-probe"}
		}, "raw-processes.jsonl"},
		{"racer signal", false, findProc(t, rec, "single-transaction/timing-race-2", "trial 000000 racer 00"), func(m map[string]any) { m["signal"] = "terminated" }, "raw-processes.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := scenariotest.Edit(t, rec, tt.obs, tt.index, tt.edit)
			findings := scenario.Evaluate(New(sourceArticles(t)), nil, out.Settings, edited).AllFindings()
			if len(findings) == 0 {
				t.Fatal("no finding")
			}
			for _, f := range findings {
				if f.File == tt.file {
					return
				}
			}
			t.Errorf("no finding in %s: %v", tt.file, findings)
		})
	}
}

// decode unmarshals raw into v, failing the test on an error: an
// observation that does not decode is a finding, never a zero value.
func decode(tb testing.TB, raw json.RawMessage, v any) {
	tb.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		tb.Fatalf("decode %.80s: %v", raw, err)
	}
}
