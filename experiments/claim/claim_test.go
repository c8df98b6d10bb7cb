package claim

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker"
	wc "idemlab/worker/claim"
)

func TestMain(m *testing.M) { worker.TestMain(m, breaks) }

func section(tb testing.TB, in Input) json.RawMessage {
	tb.Helper()
	return mustJSON(tb, in)
}

// TestPlanRefuses checks that a bad input field or flag is an error that
// names it, and is never ignored.
func TestPlanRefuses(t *testing.T) {
	good := section(t, smallInput(8, 20))
	tests := []struct {
		name    string
		section string
		ov      map[string]string
		want    string
	}{
		{"workers flag 0", string(good), map[string]string{"workers": "0"}, "--workers 0"},
		{"workers flag not a number", string(good), map[string]string{"workers": "many"}, "--workers"},
		{"repetitions flag too high", string(good), map[string]string{"repetitions": "1001"}, "--repetitions"},
		{"mutant-repetitions flag 0", string(good), map[string]string{"mutant-repetitions": "0"}, "--mutant-repetitions"},
		{"mutants flag not a bool", string(good), map[string]string{"mutants": "maybe"}, "--mutants"},
		{"mutant repetitions without mutants", string(good), map[string]string{"mutants": "false", "mutant-repetitions": "2"}, "--mutant-repetitions"},
		{"unknown field", strings.Replace(string(good), `"workers"`, `"worker"`, 1), nil, "claim.worker"},
		{"wrong type", strings.Replace(string(good), `"workers":8`, `"workers":"8"`, 1), nil, "claim.workers"},
		{"workers too few", strings.Replace(string(good), `"workers":8`, `"workers":1`, 1), nil, "claim.workers"},
		{"empty classification", strings.Replace(string(good), `"needs-triage"`, `" "`, 1), nil, "claim.classification"},
		{"ttl too short", strings.Replace(string(good), `"ttl_seconds":60`, `"ttl_seconds":1`, 1), nil, "claim.ttl_seconds"},
		{"missing section", "", nil, "claim: section is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(tt.section), Overrides: tt.ov})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestPlanOverrides checks that flags reach the settings.
func TestPlanOverrides(t *testing.T) {
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section(t, smallInput(8, 20)), Overrides: map[string]string{"workers": "3", "repetitions": "2", "mutants": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	if st.Workers != 3 || st.PoolSize != 3 || st.Repetitions != 2 || st.Mutants || st.MutantRepetitions != 0 || len(st.MutantVariants) != 0 {
		t.Fatalf("settings %+v", st)
	}
	if p.Processes() != 3 {
		t.Fatalf("%d processes, want the pool of 3", p.Processes())
	}
	if st.SQLite.BusyTimeoutMS != 5000 || st.SQLite.JournalMode != "WAL" || st.SQLite.Synchronous != "NORMAL" {
		t.Fatalf("requested SQLite %+v", st.SQLite)
	}
}

// TestRealProcesses runs a small claim scenario with real pool processes
// and real files, and reaches the verdict the way the experiment does:
// Evaluate over the records read back from the folder.
func TestRealProcesses(t *testing.T) {
	env := harnesstest.New(t)
	ov := map[string]string{"workers": "2", "repetitions": "1", "mutant-repetitions": "1"}
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section(t, smallInput(8, 20)), Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := p.Run(context.Background(), scenario.Env{Runner: env.Runner, Recorder: env.Recorder, TempDir: tmp}); err != nil {
		t.Fatal(err)
	}
	if err := env.Recorder.Close(); err != nil {
		t.Fatal(err)
	}
	// The suite copies the input file; the loader expects the copy.
	if err := os.WriteFile(filepath.Join(env.Dir, results.InputCopyFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temporary folder: %v", left)
	}
	folder, err := results.LoadRecords(env.Dir, results.Limits{})
	if err != nil || len(folder.Findings) > 0 {
		t.Fatalf("load: %v %v", err, folder.Findings)
	}
	rec := folder.Records(Name)
	if len(rec.Processes) != 2 {
		t.Fatalf("%d processes, want the pool of 2", len(rec.Processes))
	}
	settings := scenario.Marshal(p.Settings())
	res := scenario.Evaluate(New(), ov, settings, rec)
	findings := res.AllFindings()
	for _, f := range findings {
		t.Errorf("finding: %s", f)
	}
	for _, c := range res.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	if len(res.Conditions) != 15+len(wc.Mutants) {
		t.Errorf("%d conditions, want 15 rounds and %d mutants", len(res.Conditions), len(wc.Mutants))
	}
	// The same records under an oracle that believes the legacy claim
	// re-claims after the TTL must fail that condition, and only it.
	res = scenario.Evaluate(scenario.Define[Settings, Extra](reclaiming{}), ov, settings, rec)
	for _, c := range res.Conditions {
		if failing := c.Name == "3-after-ttl/legacy"; c.Pass == failing {
			t.Errorf("%s: pass %v under the wrong oracle", c.Name, c.Pass)
		}
	}
	if res.Pass {
		t.Error("the run passed under a wrong oracle")
	}
}

// reclaiming is the scenario with an oracle that believes the legacy
// claim re-claims after the TTL as the TTL claim does.
type reclaiming struct{ Scenario }

func (reclaiming) Expect(st Settings) ([]scenario.Expected, error) {
	exp, err := Scenario{}.Expect(st)
	for i, e := range exp {
		if e.Condition == RoundCondition("3-after-ttl", wc.Legacy) {
			for _, r := range st.Rounds {
				if r.ID == "3-after-ttl" {
					exp[i].Value = ExpectedGroups(Expect(wc.TTL, r, wc.Chosen, st.params()), st.Repetitions)
				}
			}
		}
	}
	return exp, err
}

// TestReport renders a clean history's result: tables fit 100 columns,
// the article's cells all match, and round 1 shows only race A.
func TestReport(t *testing.T) {
	st := Derive(smallInput(2, 1), true)
	res := scenario.Evaluate(New(), nil, scenario.Marshal(st), history(t, st).records(t))
	findings := res.AllFindings()
	if len(findings) > 0 || !res.Pass {
		t.Fatalf("pass %v, findings %v", res.Pass, findings)
	}
	sec, err := New().Report(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range sec.Tables {
		widths := map[int]int{}
		for _, r := range append([][]string{tb.Header}, tb.Rows...) {
			for i, c := range r {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
		total := 2 * (len(widths) - 1)
		for _, w := range widths {
			total += w
		}
		if total > 100 {
			t.Errorf("table %q is %d columns wide", tb.Title, total)
		}
		if len(tb.Legend) == 0 {
			t.Errorf("table %q has no legend", tb.Title)
		}
		for _, r := range tb.Rows {
			if strings.HasPrefix(r[0], "1-fresh/") && strings.Contains(strings.Join(r[1:3], " "), "B:") {
				t.Errorf("round 1 shows a race B: %v", r)
			}
		}
	}
	a := sec.Article
	if a == nil || a.Cells != 16 || a.Matches != 16 || !strings.Contains(a.Title, "ON CONFLICT DO NOTHING") {
		t.Fatalf("article %+v", a)
	}
	if len(sec.Charts) != 1 || !strings.Contains(string(sec.Charts[0].SVG), "race B") {
		t.Fatalf("%d charts, want the winners chart", len(sec.Charts))
	}
	// Round 1 has no race B: its B bar is missing, not a zero.
	if n := strings.Count(string(sec.Charts[0].SVG), "1-fresh/ttl, race B"); n != 0 {
		t.Errorf("round 1 draws a race B (%d marks)", n)
	}
}
