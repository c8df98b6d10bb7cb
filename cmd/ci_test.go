package cmd

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/all"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// stale is what an earlier run left in the CI files; every run must
// replace it.
const staleSummary = `{"status":"pass","pass":true,"failures":[]}`
const staleJUnit = `<testsuites tests="1" failures="0"></testsuites>`

// TestCIFilesOnEveryExit runs the experiment to each way it can end, with
// the CI files of an earlier passing run in place, and checks that both
// files now describe this run: its status, exit code and error line, and
// that no temporary file is left beside them.
func TestCIFilesOnEveryExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		hooks     func(cancel context.CancelFunc) Hooks
		args      func(dir string) []string
		code      int
		status    string
		errorText string
	}{
		{"pass", nil, nil, 0, StatusPass, ""},
		{"fail", func(context.CancelFunc) Hooks { return Hooks{Registry: wrongRegistry()} }, nil, 1, StatusFail, "pass: false"},
		{"harness error", func(context.CancelFunc) Hooks { return Hooks{Executable: filepath.Join(t.TempDir(), "gone")} }, nil, 3, StatusError, "hash executable"},
		{"usage error after the check", nil, func(dir string) []string {
			return []string{"--input", filepath.Join(dir, "none.json")}
		}, 2, StatusError, "none.json"},
		{"interrupted", func(cancel context.CancelFunc) Hooks {
			redelivery, _ := all.Scenarios(sourcePatterns).Lookup("redelivery")
			return Hooks{Registry: scenario.Registry{cancellingScenario{Scenario: redelivery, cancel: cancel}}}
		}, nil, 130, StatusInterrupted, "stopped by a signal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sum, ju := filepath.Join(dir, "summary.json"), filepath.Join(dir, "junit.xml")
			os.WriteFile(sum, []byte(staleSummary), 0o644)
			os.WriteFile(ju, []byte(staleJUnit), 0o644)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var h Hooks
			if tt.hooks != nil {
				h = tt.hooks(cancel)
			}
			args := []string{"experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", filepath.Join(dir, "results"), "--summary-json", sum, "--junit", ju}
			if tt.args != nil {
				args = append(args, tt.args(dir)...)
			}
			r := execCtx(ctx, t, h, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			var got Summary
			b, _ := os.ReadFile(sum)
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("summary.json: %v\n%s", err, b)
			}
			if got.Status != tt.status || got.ExitCode != tt.code || !strings.Contains(got.Error, tt.errorText) || (tt.errorText == "") != (got.Error == "") {
				t.Errorf("summary.json says status %q, exit %d, error %q; want %q, %d, an error naming %q", got.Status, got.ExitCode, got.Error, tt.status, tt.code, tt.errorText)
			}
			if got.Pass != (tt.status == StatusPass) {
				t.Errorf("summary.json pass %v for a run that ended %s", got.Pass, tt.status)
			}
			var j junitSuites
			jb, _ := os.ReadFile(ju)
			if err := xml.Unmarshal(jb, &j); err != nil {
				t.Fatalf("junit.xml: %v\n%s", err, jb)
			}
			wantErrors := 0
			if tt.status == StatusError || tt.status == StatusInterrupted {
				wantErrors = 1
				if !strings.Contains(string(jb), tt.errorText) {
					t.Errorf("junit.xml lacks the error line %q:\n%s", tt.errorText, jb)
				}
			}
			if j.Errors != wantErrors || (tt.status == StatusFail) != (j.Failures > 0) || j.Tests == 0 {
				t.Errorf("junit.xml: %d tests, %d failures, %d errors for a run that ended %s:\n%s", j.Tests, j.Failures, j.Errors, tt.status, jb)
			}
			want := []string{"junit.xml", "summary.json"}
			if tt.code <= 1 {
				want = []string{"junit.xml", "results", "summary.json"}
			}
			assertOnly(t, dir, want...)
		})
	}
}

// TestCIPathsCheckedFirst refuses an unwritable --summary-json or --junit
// with exit 2 before anything runs: no results folder, no CI file.
func TestCIPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("mine"), 0o644)
	tests := []struct {
		name, flag, path, want string
	}{
		{"a missing folder", "--junit", filepath.Join(dir, "nope", "junit.xml"), "does not exist"},
		{"under a file", "--summary-json", filepath.Join(file, "s.json"), "does not exist"},
		{"a folder", "--summary-json", dir, "is a folder"},
		{"one file for both", "--junit", filepath.Join(dir, "same"), "give each its own file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", filepath.Join(dir, "results"), tt.flag, tt.path}
			if tt.name == "one file for both" {
				args = append(args, "--summary-json", tt.path)
			}
			r := execIn(t, Hooks{}, args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.flag) || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d stderr %q; want 2 naming %s and %q", r.code, r.stderr, tt.flag, tt.want)
			}
			assertOnly(t, dir, "file")
		})
	}
}

// TestQuiet prints the one-line result and the failures, nothing else:
// no progress, no tables, no next steps.
func TestQuiet(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		hooks  Hooks
		stdout string
		stderr []string
	}{
		{"pass", Hooks{}, "PASS: results in OUT\n", nil},
		{"fail", Hooks{Registry: wrongRegistry()}, "FAIL: results in OUT\n", []string{
			"FAIL redelivery/separate-commit/crash-after-job-commit: delivery 2 follow_up_jobs want 1 got 2",
			"idemlab: expectation failed: results written to OUT with pass: false",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			r := execIn(t, tt.hooks, "experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", out)
			if diff := cmp.Diff(tt.stdout, strings.ReplaceAll(r.stdout, out, "OUT")); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			var lines []string
			if s := strings.TrimSuffix(strings.ReplaceAll(r.stderr, out, "OUT"), "\n"); s != "" {
				lines = strings.Split(s, "\n")
			}
			if diff := cmp.Diff(tt.stderr, lines); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
	r := execIn(t, Hooks{}, "experiment", "--help")
	if !strings.Contains(r.stdout, "--quiet prints only the one-line result") {
		t.Errorf("experiment --help does not say what --quiet prints:\n%s", r.stdout)
	}
}

// execCtx is execIn with a context the test can cancel.
func execCtx(ctx context.Context, t *testing.T, h Hooks, args ...string) run {
	t.Helper()
	var out, errb strings.Builder
	code := execute(ctx, args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, withPatterns(h))
	return run{code, out.String(), errb.String()}
}

// cancellingScenario is a scenario whose run is stopped as Ctrl-C stops
// it: the context is cancelled once the run has begun.
type cancellingScenario struct {
	scenario.Scenario
	cancel context.CancelFunc
}

func (s cancellingScenario) Plan(ctx context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	p, err := s.Scenario.Plan(ctx, req)
	return cancellingPlan{p, s.cancel}, err
}

type cancellingPlan struct {
	scenario.Plan
	cancel context.CancelFunc
}

func (p cancellingPlan) Run(ctx context.Context, env scenario.Env) error {
	p.cancel()
	return p.Plan.Run(ctx, env)
}

// TestEveryScenarioExplains: each registered scenario, as registered (an
// adapter such as scenario.Define included), says its differences in its
// own words, so no failure line falls back to bare paths.
func TestEveryScenarioExplains(t *testing.T) {
	// An adapter forwards to the scenario's own Explain, which answers
	// every difference; one that answers nothing keeps the paths.
	c := results.ConditionResult{Differences: []results.Difference{{Path: "[0].x", Expected: "1", Observed: "2"}}}
	for _, s := range all.Scenarios(sourcePatterns) {
		if len(s.Explain(c)) == 0 {
			t.Errorf("scenario %s does not explain its differences", s.Name())
		}
	}
}
