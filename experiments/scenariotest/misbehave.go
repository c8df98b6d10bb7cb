package scenariotest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// RunFailing runs the scenarios of reg on input (the text of an input
// file) through suite.Run, as the experiment command does, with real
// worker processes, and checks what a misbehaving worker must give: the
// run fails an expectation (exit 1) and its folder is written with
// "pass": false; verify of that folder finds it consistent and reports a
// failed run (exit 4), deriving exactly the findings the run stored. It
// returns results.json as written.
//
// The breakage is the caller's: it sets worker.EnvBreak with t.Setenv
// before the call, and its TestMain hands the broken workers to
// worker.TestMain.
func RunFailing(tb testing.TB, reg scenario.Registry, input string, overrides map[string]string) *results.Results {
	tb.Helper()
	dir := tb.TempDir()
	in := filepath.Join(dir, "input.json")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		tb.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	_, _, err = suite.Run(context.Background(), suite.Options{
		Registry: reg, Scenarios: reg.Names(), Out: out, InputPath: in, Overrides: overrides,
		Executable: exe, Workdir: dir, TempDir: tb.TempDir(),
	})
	if !errors.Is(err, errclass.ErrExpectation) {
		tb.Fatalf("run: err = %v, want a failed expectation (exit 1)", err)
	}
	b, err := os.ReadFile(filepath.Join(out, results.ResultsFile))
	if err != nil {
		tb.Fatalf("the failed run wrote no folder: %v", err)
	}
	var res results.Results
	if err := json.Unmarshal(b, &res); err != nil {
		tb.Fatal(err)
	}
	if res.Pass || !strings.Contains(string(b), `"pass": false`) {
		tb.Fatalf("%s does not say pass: false", results.ResultsFile)
	}
	o, err := review.Verify(tb.Context(), out, review.Options{Registry: reg})
	if err != nil {
		tb.Fatalf("verify: %v", err)
	}
	for _, f := range o.Findings {
		tb.Errorf("verify disagrees with the stored verdict: %s", f)
	}
	if v := review.Verdict(o, out); !errors.Is(v, errclass.ErrRunFailed) {
		tb.Errorf("verify: %v, want a consistent folder of a failed run (exit 4)", v)
	}
	if o.Derived != nil {
		if diff := cmp.Diff(AllFindings(&res), AllFindings(o.Derived)); diff != "" {
			tb.Errorf("findings verify derives differ from the stored ones (-stored +derived):\n%s", diff)
		}
	}
	if len(AllFindings(&res)) > 0 {
		dropFinding(tb, out, reg)
	}
	return &res
}

// dropFinding edits the folder's results.json as a tamperer would, taking
// out one stored finding, and checks that verify then disagrees (exit 1):
// a failed run's verdict is as protected as a passing one's.
func dropFinding(tb testing.TB, out string, reg scenario.Registry) {
	tb.Helper()
	path := filepath.Join(out, results.ResultsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	if !dropFirst(m) {
		tb.Fatalf("%s holds no finding to take out", results.ResultsFile)
	}
	if b, err = json.Marshal(m); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	o, err := review.Verify(tb.Context(), out, review.Options{Registry: reg})
	if err != nil {
		tb.Fatalf("verify: %v", err)
	}
	if v := review.Verdict(o, out); !errors.Is(v, errclass.ErrFindings) {
		tb.Errorf("verify of a folder with a stored finding taken out: %v, want a disagreement (exit 1)", v)
	}
}

// dropFirst removes the first finding stored under a scenario or one of
// its conditions, and says whether there was one.
func dropFirst(m map[string]any) bool {
	scenarios, _ := m["scenarios"].([]any)
	for _, sv := range scenarios {
		s, _ := sv.(map[string]any)
		holders := []map[string]any{s}
		conds, _ := s["conditions"].([]any)
		for _, cv := range conds {
			c, _ := cv.(map[string]any)
			holders = append(holders, c)
		}
		for _, h := range holders {
			if fs, _ := h["findings"].([]any); len(fs) > 0 {
				h["findings"] = fs[1:]
				return true
			}
		}
	}
	return false
}

// AllFindings lists every scenario's findings, in order.
func AllFindings(res *results.Results) []results.Finding {
	var out []results.Finding
	for _, s := range res.Scenarios {
		out = append(out, s.AllFindings()...)
	}
	return out
}

// ConditionOf returns a scenario's condition from results; ok is false
// when there is none of that name.
func ConditionOf(res *results.Results, scenarioName, condition string) (results.ConditionResult, bool) {
	for _, s := range res.Scenarios {
		if s.Name != scenarioName {
			continue
		}
		for _, c := range s.Conditions {
			if c.Name == condition {
				return c, true
			}
		}
	}
	return results.ConditionResult{}, false
}

// FailsWith checks that a condition failed with a finding whose message
// contains want, and stored it with the condition.
func FailsWith(tb testing.TB, res *results.Results, scenarioName, condition, want string) {
	tb.Helper()
	c, ok := ConditionOf(res, scenarioName, condition)
	if !ok {
		tb.Fatalf("no condition %s/%s", scenarioName, condition)
	}
	var msgs []string
	for _, f := range c.Findings {
		if f.Condition == condition && strings.Contains(f.Message, want) {
			if c.Pass {
				tb.Errorf("%s/%s passed with the finding %q", scenarioName, condition, f.Message)
			}
			return
		}
		msgs = append(msgs, f.Message)
	}
	tb.Errorf("%s/%s has no finding containing %q; its findings:\n%s", scenarioName, condition, want, strings.Join(msgs, "\n"))
}
