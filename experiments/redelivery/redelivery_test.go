package redelivery

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/worker"
	wr "idemlab/worker/redelivery"
)

func TestMain(m *testing.M) { worker.TestMain(m) }

var input = Input{EventID: "agent-run-042:completed", JobKey: "review-agent-run-042"}

// counts is a hand-made observation: rows and exit code only.
type counts struct{ exit, jobs, processed int }

func pick(ds []Delivery) []counts {
	var out []counts
	for _, d := range ds {
		out = append(out, counts{d.ExitCode, d.FollowUpJobs, d.ProcessedEvents})
	}
	return out
}

// TestExpect checks the oracle against rows written out by hand from the
// transaction semantics, including points the article did not crash at.
func TestExpect(t *testing.T) {
	tests := []struct {
		pattern wr.Pattern
		crashAt string
		want    []counts
	}{
		{wr.SeparateCommit, "", []counts{{0, 1, 1}, {0, 1, 1}}},
		{wr.SeparateCommit, wr.PointAfterJobInsert, []counts{{17, 0, 0}, {0, 1, 1}}},
		{wr.SeparateCommit, wr.PointAfterJobCommit, []counts{{17, 1, 0}, {0, 2, 1}}},
		{wr.SeparateCommit, wr.PointAfterProcessedCommit, []counts{{17, 1, 1}, {0, 1, 1}}},
		{wr.SingleTransaction, "", []counts{{0, 1, 1}, {0, 1, 1}}},
		{wr.SingleTransaction, wr.PointAfterProcessedInsert, []counts{{17, 0, 0}, {0, 1, 1}}},
		{wr.SingleTransaction, wr.PointBeforeCommit, []counts{{17, 0, 0}, {0, 1, 1}}},
		{wr.SingleTransaction, wr.PointAfterCommit, []counts{{17, 1, 1}, {0, 1, 1}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.pattern)+"/"+tt.crashAt, func(t *testing.T) {
			got := Expect(Condition{Pattern: tt.pattern, CrashAt: tt.crashAt, Deliveries: 2})
			if diff := cmp.Diff(tt.want, pick(got), cmp.AllowUnexported(counts{})); diff != "" {
				t.Errorf("Expect (-want +got):\n%s", diff)
			}
			if tt.crashAt != "" && got[0].CrashedAt != tt.crashAt {
				t.Errorf("crashed_at %q, want %q", got[0].CrashedAt, tt.crashAt)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	want := []Delivery{{Delivery: 1, ExitCode: 17, FollowUpJobs: 1, Points: []string{"a"}}}
	tests := []struct {
		name     string
		observed []Delivery
		pass     bool
	}{
		{"equal", []Delivery{{Delivery: 1, ExitCode: 17, FollowUpJobs: 1, Points: []string{"a"}}}, true},
		{"row count differs", []Delivery{{Delivery: 1, ExitCode: 17, FollowUpJobs: 2, Points: []string{"a"}}}, false},
		{"exit differs", []Delivery{{Delivery: 1, ExitCode: 0, FollowUpJobs: 1, Points: []string{"a"}}}, false},
		{"points differ", []Delivery{{Delivery: 1, ExitCode: 17, FollowUpJobs: 1, Points: []string{"a", "b"}}}, false},
		{"delivery missing", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pass, diff := Check(want, tt.observed)
			if pass != tt.pass || (diff == "") != tt.pass {
				t.Errorf("Check = %v, diff %q; want pass %v", pass, diff, tt.pass)
			}
		})
	}
}

// TestRunRealProcesses runs the article's conditions through real child
// processes and real files.
func TestRunRealProcesses(t *testing.T) {
	env := harnesstest.New(t)
	res, err := Run(context.Background(), Config{Runner: env.Runner, Recorder: env.Recorder, Input: input, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pass {
		for _, c := range res.Conditions {
			t.Errorf("%s: %s", c.Name, c.Diff)
		}
	}
	obs := env.Lines(t, "observations.jsonl")
	procs := env.Lines(t, "raw-processes.jsonl")
	if len(obs) != 2*len(Conditions()) || len(procs) != len(obs) {
		t.Fatalf("%d observations and %d processes, want %d each", len(obs), len(procs), 2*len(Conditions()))
	}
	// The headline: separate commits crashed after the job's commit leave 2 jobs.
	second := obs[3]["observed"].(map[string]any)
	if obs[3]["condition"] != "separate-commit/crash-after-job-commit" || second["follow_up_jobs"] != 2.0 {
		t.Errorf("observation 4 = %v, want separate-commit crash with 2 jobs", obs[3])
	}
	if s := res.Settings.(Settings); s.SQLite.JournalMode != "DELETE" || s.SQLite.Synchronous != "FULL" {
		t.Errorf("pragmas in effect %+v, want DELETE/FULL", s.SQLite)
	}
}

// TestRunEveryPointRealProcesses crashes real workers at every point the
// workers report, so no point is listed by hand.
func TestRunEveryPointRealProcesses(t *testing.T) {
	env := harnesstest.New(t)
	var conds []Condition
	for _, p := range Patterns() {
		probe, err := env.Runner.Run(context.Background(), harness.Spec{
			Scenario: Name, Condition: "probe", Worker: Worker,
			Args: []string{"-db", filepath.Join(t.TempDir(), "probe.sqlite3"), "-pattern", string(p), "-event-id", "e", "-job-key", "k"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, point := range probe.Report.Points {
			conds = append(conds, Condition{Name: string(p) + "/" + point, Pattern: p, CrashAt: point, Deliveries: 2})
		}
	}
	res, err := Run(context.Background(), Config{Runner: env.Runner, Recorder: env.Recorder, Input: input, Conditions: conds, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Conditions {
		if !c.Pass {
			t.Errorf("%s:\n%s", c.Name, c.Diff)
		}
	}
}

// TestWrongOracleFails shows that an expectation that does not hold turns
// into pass: false with a readable diff.
func TestWrongOracleFails(t *testing.T) {
	env := harnesstest.New(t)
	wrong := func(c Condition) []Delivery {
		d := Expect(c)
		if c.CrashAt == wr.PointAfterJobCommit {
			d[1].FollowUpJobs = 1 // what one might naively hope for
		}
		return d
	}
	res, err := Run(context.Background(), Config{Runner: env.Runner, Recorder: env.Recorder, Input: input, Oracle: wrong, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass {
		t.Fatal("run passed with a wrong oracle")
	}
	for _, c := range res.Conditions {
		failing := c.Name == "separate-commit/crash-after-job-commit"
		if c.Pass == failing {
			t.Errorf("%s: pass %v", c.Name, c.Pass)
		}
		if failing && !strings.Contains(c.Diff, "FollowUpJobs") {
			t.Errorf("diff does not name the field:\n%s", c.Diff)
		}
	}
}
