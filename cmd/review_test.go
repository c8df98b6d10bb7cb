package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/suite"
)

func TestVerifyAndReportAFreshRun(t *testing.T) {
	// Run away from the source tree: others may edit it between the run and
	// the verify, and the code hash check has its own test in review.
	goodInput, err := filepath.Abs(goodInput)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, suite.Options{}, "experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", out)
	if r.code != 0 {
		t.Fatalf("experiment exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "idemlab verify "+out) || !strings.Contains(r.stdout, "idemlab report "+out) {
		t.Errorf("experiment output does not point to verify and report:\n%s", r.stdout)
	}
	r = execIn(t, suite.Options{}, "verify", "--quiet", "--rerun", "--input", goodInput, out)
	if r.code != 0 {
		t.Fatalf("verify --rerun exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r.stderr != "" {
		t.Errorf("verify wrote to stderr though it is not a terminal: %q", r.stderr)
	}
	if !strings.Contains(r.stdout, "code hash check skipped") {
		t.Errorf("verify away from the source tree does not say the code hash was skipped:\n%s", r.stdout)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	md := filepath.Join(t.TempDir(), "report.md")
	r = execIn(t, suite.Options{}, "report", out, "--html", page, "--md", md)
	if r.code != 0 {
		t.Fatalf("report exit %d: %s", r.code, r.stderr)
	}
	for _, p := range []string{page, md, filepath.Join(filepath.Dir(md), "report-redelivery-jobs.svg")} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("report did not write %s: %v", p, err)
		}
	}

	// Tampering with a count makes verify exit 1, naming file and field.
	p := filepath.Join(out, "observations.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"follow_up_jobs":2`, `"follow_up_jobs":3`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = execIn(t, suite.Options{}, "verify", "--input", goodInput, out)
	if r.code != 1 || !strings.Contains(r.stdout, "observations.jsonl: line 4: observed.follow_up_jobs") {
		t.Fatalf("verify of a tampered folder: exit %d, want 1 naming observations.jsonl line 4:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestVerifyUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no folder", []string{"verify"}},
		{"missing folder", []string{"verify", "--input", goodInput, filepath.Join(t.TempDir(), "nope")}},
		{"missing input", []string{"verify", "--input", filepath.Join(t.TempDir(), "nope.json"), t.TempDir()}},
		{"report missing folder", []string{"report", filepath.Join(t.TempDir(), "nope")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := execIn(t, suite.Options{}, tt.args...); r.code != 2 {
				t.Fatalf("exit %d, want 2: %s", r.code, r.stderr)
			}
		})
	}
}
