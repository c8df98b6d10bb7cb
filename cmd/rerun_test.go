package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"idemlab/experiments/all"
	"idemlab/experiments/redelivery"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// rerunSettings are small settings for every scenario, opt-in ones too.
var rerunSettings = map[string][]string{
	"redelivery": nil,
	"batch":      {"--items", "6", "--fail-at", "4", "--trials", "2"},
	"claim":      {"--workers", "2", "--repetitions", "1", "--mutant-repetitions", "1"},
	"explore":    {"--trials", "4", "--rounds", "0"}, // no races: see shardFlags
	"durability": {"--pattern", "redelivery-single", "--journal-mode", "DELETE", "--synchronous", "FULL"},
	"pattern":    {"--pattern-file", "../testdata/patterns/single-transaction.json", "--faults", "points,power"},
}

// experimentFolder runs one scenario with the input file into a new
// folder and fails the test unless the run passed.
func experimentFolder(t *testing.T, h Hooks, input, name string, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	args := append([]string{"experiment", "--quiet", "--input", input, "--scenario", name, "--out", out}, flags...)
	if r := execIn(t, h, args...); r.code != 0 {
		t.Fatalf("%s: exit %d, want 0\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return out
}

// TestRerunReproducesEveryScenario: every scenario's folder, run again by
// verify --rerun, is reproduced (exit 0). What the rerun leaves out is only
// what each scenario declares a measurement, so a timing field that
// escaped the declaration would fail here.
func TestRerunReproducesEveryScenario(t *testing.T) {
	t.Parallel()
	for _, s := range all.Scenarios(sourcePatterns) {
		flags, ok := rerunSettings[s.Name()]
		if !ok {
			t.Errorf("scenario %s has no small settings in rerunSettings; add them so its rerun is tested", s.Name())
			continue
		}
		t.Run(s.Name(), func(t *testing.T) {
			t.Parallel()
			dir := experimentFolder(t, Hooks{}, "../input.json", s.Name(), flags...)
			r := execIn(t, Hooks{}, "verify", "--rerun", dir)
			if r.code != 0 || !strings.Contains(r.stdout, "rerun: "+s.Name()+" reproduced") {
				t.Errorf("verify --rerun: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// startedExtra and startedPlainExtra are redelivery's extra table with one
// more derived field: when the first worker started, which no two runs
// share. They differ only in its declaration.
type startedExtra struct {
	redelivery.Extra
	StartedMS float64 `json:"started_ms" idemlab:"measure"`
}

type startedPlainExtra struct {
	redelivery.Extra
	StartedMS float64 `json:"started_ms"`
}

// started is the registry's redelivery with that field in its extra
// table, declared a measurement or, with plain, as an ordinary float64.
type started struct {
	scenario.Scenario
	plain bool
}

func newStarted(t *testing.T, plain bool) started {
	t.Helper()
	s, ok := all.Scenarios(sourcePatterns).Lookup("redelivery")
	if !ok {
		t.Fatal("no redelivery scenario in the registry")
	}
	return started{Scenario: s, plain: plain}
}

func (s started) Fold(raw json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	f, findings := s.Scenario.Fold(raw, rec)
	ex, _ := f.Extra.(redelivery.Extra)
	var ms float64
	if len(rec.Processes) > 0 {
		at, err := time.Parse(time.RFC3339Nano, rec.Processes[0].StartedAt)
		if err != nil {
			findings = append(findings, results.Finding{File: results.ProcessesFile, Field: "started_at", Message: err.Error()})
		}
		ms = float64(at.UnixMicro()) / 1000
	}
	if s.plain {
		f.Extra = startedPlainExtra{ex, ms}
	} else {
		f.Extra = startedExtra{ex, ms}
	}
	return f, findings
}

// Report shows redelivery's tables; the extra field is not one of them.
func (s started) Report(res results.ScenarioResult) (scenario.Section, error) {
	res.Extra = nil
	return s.Scenario.Report(res)
}

// TestRerunComparesUndeclaredFields: a derived field that differs between
// any two runs is left out of the rerun when its type declares it a
// measurement (exit 0), and compared when it is a plain float64, which
// fails the rerun with exit 1 and names the field.
func TestRerunComparesUndeclaredFields(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		h := Hooks{Registry: scenario.Registry{newStarted(t, plain)}}
		dir := experimentFolder(t, h, goodInput, "redelivery")
		r := execIn(t, h, "verify", "--rerun", dir)
		switch {
		case !plain && r.code != 0:
			t.Errorf("declared a measurement: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
		case plain && (r.code != 1 || !strings.Contains(r.stdout, "✗ rerun: redelivery.extra.started_ms: recorded ")):
			t.Errorf("a plain float64: exit %d, want 1 naming redelivery.extra.started_ms\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
}
