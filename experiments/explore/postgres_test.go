package explore

import (
	"context"
	"encoding/json"
	"idemlab/experiments/subject/deliver"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/experiments/subject/builtin"
	"idemlab/worker/store"
)

// pgInput is a small exploration: K = 2, 4 and 8, three rounds each, and
// a batch of two items. The article files' concurrent class is judged by
// its known_unsafe, which separate commits and claim-do-nothing list:
// three rounds with crashing racers per K break them in every run.
const pgInput = `{"event_id": "agent-run-042:completed", "job_key": "review-agent-run-042", "seed": 1, "trials": 0, "racers": [2, 4, 8], "rounds": 3, "parallel": 2, "max_attempts": 3, "items": 2}`

// pgRun is one run of the exploration on a throwaway cluster, shared by
// the tests that judge it.
var pgRun struct {
	once sync.Once
	out  scenariotest.Outcome
	plan int
	err  string
}

// runOnPostgres runs pgInput on PostgreSQL under every isolation level
// (the hand-written racers and the article files),
// as `experiment --backend postgres --scenario explore` does, and
// evaluates the records through Evaluate. It skips, saying why, where
// the PostgreSQL binaries are missing.
func runOnPostgres(t *testing.T) (scenariotest.Outcome, int) {
	t.Helper()
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	pgRun.once.Do(func() {
		spec := backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: "off"}
		// The hand-written racers, as a folder of format 6 raced them,
		// beside the article files, as a run races them now: one run
		// gives both folds their records.
		p, err := formatSix{}.Plan(context.Background(), scenario.PlanRequest{Backend: spec, Section: json.RawMessage(pgInput)})
		if err == nil {
			pl := p.(*plan)
			pl.s.Articles, err = articleSettings(context.Background(), sourceArticles(t), pl.s, spec)
		}
		if err != nil {
			pgRun.err = err.Error()
			return
		}
		srv, err := backend.Start(context.Background(), spec, backend.Options{})
		if err != nil {
			pgRun.err = err.Error()
			return
		}
		defer srv.Close()
		// The records are read into memory before the first test that
		// runs this ends and its folders go.
		env := harnesstest.New(t)
		if err := p.Run(context.Background(), scenario.Env{Runner: env.Runner, Recorder: env.Recorder, TempDir: t.TempDir(), Backend: srv}); err != nil {
			pgRun.err = err.Error()
			return
		}
		if err := env.Recorder.Close(); err != nil {
			pgRun.err = err.Error()
			return
		}
		os.WriteFile(filepath.Join(env.Dir, results.InputCopyFile), []byte("{}"), 0o644)
		folder, err := results.LoadRecords(env.Dir, results.Limits{})
		if err != nil || len(folder.Findings) > 0 {
			pgRun.err = "load: " + results.Compact(folder.Findings)
			return
		}
		rec := folder.Records(Name)
		settings := scenario.Marshal(p.Settings())
		res := scenario.Evaluate(New(sourceArticles(t)), nil, settings, rec)
		pgRun.out = scenariotest.Outcome{Result: res, Records: rec, Settings: settings, Findings: res.AllFindings()}
		pgRun.plan = p.Processes()
	})
	if pgRun.err != "" {
		t.Fatal(pgRun.err)
	}
	return pgRun.out, pgRun.plan
}

// TestPostgresRaces: the exploration on PostgreSQL runs every pattern
// that races there under every level and K, each round judged by the
// oracle, with the records naming each condition's level and the racers'
// sessions reading it back; the run starts exactly the processes its plan
// counts, which the progress total shows.
func TestPostgresRaces(t *testing.T) {
	out, planned := runOnPostgres(t)
	for _, f := range out.Findings {
		t.Errorf("finding: %s", f)
	}
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	if st.Backend != store.BackendPostgres || !slices.Equal(st.Isolations, levelNames()) || len(st.NotRun) == 0 {
		t.Errorf("settings say backend %q, levels %v, %d parts not run", st.Backend, st.Isolations, len(st.NotRun))
	}
	levels := map[string]int{}
	for _, c := range st.Conditions {
		levels[c.Isolation]++
	}
	for _, l := range levelNames() {
		if want := len(st.Patterns) * len(st.Racers); levels[l] != want {
			t.Errorf("%d conditions under %s, want one per pattern and K (%d)", levels[l], l, want)
		}
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	if got := len(out.Records.Processes); got != planned {
		t.Errorf("the run recorded %d processes; its plan counts %d", got, planned)
	}
	var x Extra
	if err := json.Unmarshal(out.Result.Extra, &x); err != nil {
		t.Fatal(err)
	}
	for _, v := range x.TimingViolations {
		if v.Pattern == "single-transaction" {
			t.Errorf("one transaction broke %s in %s round %d", v.Invariant, v.Condition, v.Trial)
		}
	}
	for _, c := range out.Result.Conditions {
		var o deliver.TimingObserved
		json.Unmarshal(c.Observed, &o)
		t.Logf("%s: %v, %d serialization failures run again", c.Name, o.Timing.Histogram, o.Timing.SerializationErrors)
	}
}

// TestPostgresRecordsNameTheLevel: a condition whose recorded level is
// changed no longer matches the level its steps' connection strings ask
// for, nor what its racers' sessions read back, and a
// second job written into a single transaction's last rows is outside
// its allowed set: both fail through the same Evaluate.
func TestPostgresRecordsNameTheLevel(t *testing.T) {
	out, _ := runOnPostgres(t)
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	cond := ""
	for i, c := range st.Conditions {
		if c.Isolation == "repeatable-read" && c.Pattern == "single-transaction" {
			st.Conditions[i].Isolation, cond = "serializable", c.Name
			break
		}
	}
	res := scenario.Evaluate(New(sourceArticles(t)), nil, scenario.Marshal(st), out.Records)
	for _, part := range []string{"the settings require default_transaction_isolation=\"serializable\"", "but condition " + cond + " runs under"} {
		if !hasFinding(res, part) {
			t.Errorf("%s recorded as serializable: no finding %q; findings %v", cond, part, res.AllFindings())
		}
	}

	last := -1
	for i, l := range out.Records.Observations {
		var o Observation
		json.Unmarshal(l.Raw, &o)
		if o.Condition == cond && o.Step == StepRecovery {
			last = i
		}
	}
	rec := scenariotest.Edit(t, out.Records, true, last, func(m map[string]any) {
		rows := m["rows"].(map[string]any)
		rows[builtin.TableJobs] = append(rows[builtin.TableJobs].([]any), st.EventID+"|"+st.JobKey)
	})
	res = scenario.Evaluate(New(sourceArticles(t)), nil, out.Settings, rec)
	for _, c := range res.Conditions {
		if c.Name == cond && c.Pass {
			t.Errorf("%s passes with a second job in its last rows", cond)
		}
	}
}

// oneJobOracle is explore with the oracle a reader might expect of
// separate commits on PostgreSQL: exactly one job after every race.
type oneJobOracle struct{ Scenario }

func (w oneJobOracle) Expect(st Settings) ([]scenario.Expected, error) {
	exp, err := w.Scenario.Expect(st)
	for i := range exp {
		if e := exp[i].Value.(Expected); e.Kind == KindRace && strings.HasPrefix(exp[i].Condition, "separate-commit/") {
			e.Allowed = []string{OutcomeClean}
			exp[i].Value = e
		}
	}
	return exp, err
}

// TestPostgresOneJobOracleFails: the oracle that demands one job of
// separate commits fails every condition whose rounds left a second job,
// and only those: the duplicates are the pattern's, not the harness's.
func TestPostgresOneJobOracleFails(t *testing.T) {
	out, _ := runOnPostgres(t)
	res := scenario.Evaluate(scenario.Define[Settings, Extra](oneJobOracle{}), nil, out.Settings, out.Records)
	dups := 0
	for _, c := range res.Conditions {
		var o deliver.TimingObserved
		json.Unmarshal(c.Observed, &o)
		dup := strings.HasPrefix(c.Name, "separate-commit/") && o.Trials > o.Timing.Histogram[OutcomeClean]
		if dup {
			dups++
		}
		if c.Pass == dup {
			t.Errorf("%s: pass %v under the one-job oracle, histogram %v", c.Name, c.Pass, o.Timing.Histogram)
		}
	}
	if dups == 0 {
		t.Log("no race of separate commits left a second job in this run, so the one-job oracle had nothing to fail")
	}
}

func hasFinding(res results.ScenarioResult, part string) bool {
	for _, f := range res.AllFindings() {
		if strings.Contains(f.String(), part) {
			return true
		}
	}
	return false
}

// TestNoSerializationUnderReadCommitted: the oracle of a race under READ
// COMMITTED fails a condition whose racers met 40001 or 40P01, retried or
// not, and the other levels' oracle allows them.
func TestNoSerializationUnderReadCommitted(t *testing.T) {
	st := postgresSettings(NewSettings(Input{EventID: "e", JobKey: "k", Racers: []int{2}, Rounds: 1, Items: 1}, -1),
		backend.Spec{Name: store.BackendPostgres, SynchronousCommit: "on"}, levelNames())
	for _, tt := range []struct {
		name    string
		retried int
		ended   int
	}{{"none", 0, 0}, {"retried", 2, 0}, {"ended on one", 0, 1}} {
		for _, c := range st.Conditions {
			e, err := ExpectCondition(st, c)
			if err != nil {
				t.Fatal(err)
			}
			o := deliver.TimingObserved{Trials: 1, Timing: deliver.TimingFigures{Histogram: map[string]int{OutcomeClean: 1}, RacerEnds: map[string]int{}, SerializationErrors: tt.retried}}
			if tt.ended > 0 {
				o.Timing.RacerEnds["serialization"] = tt.ended
			}
			pass, diffs, err := Scenario{}.Check(c.Name, scenario.Marshal(e), scenario.Marshal(o))
			if err != nil {
				t.Fatal(err)
			}
			if want := c.Isolation != "read-committed" || tt.retried+tt.ended == 0; pass != want {
				t.Errorf("%s, %s: pass %v, want %v (%v)", c.Name, tt.name, pass, want, diffs)
			}
		}
	}
}

// levelNames are the isolation levels by their command-line names, in
// order.
func levelNames() []string {
	var out []string
	for _, l := range store.Isolations {
		out = append(out, l.String())
	}
	return out
}
