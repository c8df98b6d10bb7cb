package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
)

// RunFunc runs the named scenarios with the given input file and overrides
// into a new folder out, as the experiment command does. The caller wires
// it to the suite, so this package imports no scenario.
// and reads the files its plans name through files, the folder's copies.
type RunFunc func(ctx context.Context, out, input string, scenarios []string, overrides map[string]string, files scenario.Files) error

// RerunOutcome is the comparison of a folder with a fresh run.
type RerunOutcome struct {
	Scenarios []string
	// Differences lists, per scenario, each deterministic field that the
	// fresh run gave differently, as "path: recorded A, rerun B".
	Differences map[string][]string
	// CodeChanged says how the code of the rerun differs from the run's.
	CodeChanged []string
	// Merged says the folder was merged from shards: the rerun runs the
	// whole plan here, one discovery run per pattern where each shard ran
	// its own, so the process records are not compared; the derived
	// result is.
	Merged bool
	// Measured lists, per scenario, the derived fields left out because
	// the scenario declares them measurements (results.MeasureTag), as
	// JSON paths with array indices as [*].
	Measured map[string][]string
}

// OK says whether the rerun reproduced every deterministic part.
func (o *RerunOutcome) OK() bool { return len(o.Differences) == 0 }

// Rerun runs each scenario of a verified folder again, with the folder's
// own input copy and its recorded overrides, and compares what must not
// change: settings, expected and observed figures, findings, verdicts, and
// every process's worker, exit and crash points. What is left out is
// declared, not guessed from names: the derived fields each scenario's
// types tag as measurements (scenario.Measurements), and of the process
// records only the view below keeps anything (no times, pids or paths).
func Rerun(ctx context.Context, o *Outcome, run RunFunc, opts Options, tempDir string) (*RerunOutcome, error) {
	f := o.Folder
	if f == nil || f.Results == nil || f.Input == nil || o.Derived == nil {
		return nil, fmt.Errorf("%w: rerun needs a readable results.json and the folder's %s", errclass.ErrFindings, results.InputCopyFile)
	}
	tmp, err := os.MkdirTemp(tempDir, "idemlab-rerun-")
	if err != nil {
		return nil, fmt.Errorf("%w: create rerun folder: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(tmp)
	input := filepath.Join(tmp, "input.json")
	if err := os.WriteFile(input, f.Input, 0o644); err != nil {
		return nil, fmt.Errorf("%w: write the input copy: %w", errclass.ErrHarness, err)
	}
	out := &RerunOutcome{Differences: map[string][]string{}, Measured: map[string][]string{}}
	for i, rs := range f.Results.Scenarios {
		out.Scenarios = append(out.Scenarios, rs.Name)
		dir := filepath.Join(tmp, fmt.Sprintf("results-%d", i))
		if err := run(ctx, dir, input, []string{rs.Name}, rs.Overrides, f); err != nil && !isExpectation(err) {
			return nil, fmt.Errorf("rerun of scenario %s: %w", rs.Name, err)
		}
		fresh, err := Verify(ctx, dir, Options{Registry: opts.Registry, Limits: opts.Limits})
		if err != nil || fresh.Derived == nil || len(fresh.Derived.Scenarios) != 1 {
			return nil, fmt.Errorf("%w: rerun of scenario %s: cannot read the fresh folder: %w", errclass.ErrHarness, rs.Name, err)
		}
		if !fresh.OK() {
			return nil, fmt.Errorf("%w: rerun of scenario %s: the fresh folder does not verify: %s", errclass.ErrHarness, rs.Name, fresh.Findings[0])
		}
		s, ok := opts.Registry.Lookup(rs.Name)
		if !ok {
			return nil, fmt.Errorf("%w: rerun of scenario %s: not a scenario of this idemlab", errclass.ErrHarness, rs.Name)
		}
		m := scenario.Measurements(s, rs.Settings, f.Records(rs.Name))
		m.Union(scenario.Measurements(s, fresh.Derived.Scenarios[0].Settings, fresh.Folder.Records(rs.Name)))
		out.Measured[rs.Name] = m.Paths()
		a := projection(scenario.Replayable(o.Derived.Scenarios[i], m), f.Records(rs.Name), scheduled(f.Results.Format, rs))
		b := projection(scenario.Replayable(fresh.Derived.Scenarios[0], m), fresh.Folder.Records(rs.Name), scheduled(fresh.Folder.Results.Format, fresh.Folder.Results.Scenarios[0]))
		if out.Merged = len(f.Results.Shards) > 0; out.Merged {
			a.Processes, b.Processes = nil, nil
			a.Plan = nil
		}
		for _, d := range results.DiffPaths(rs.Name, a, b) {
			// An older folder's settings hold how many trials ran at
			// once; a rerun records it beside them.
			if movedParallel(rs.Name+".settings", results.FieldDiff{Path: d.Path, A: d.B, B: d.A}) {
				continue
			}
			out.Differences[rs.Name] = append(out.Differences[rs.Name], fmt.Sprintf("%s: recorded %s, rerun %s", d.Path, d.A, d.B))
		}
		if i == 0 {
			out.CodeChanged = codeDiff(f.Results.Code, fresh.Folder.Results.Code)
		}
	}
	return out, nil
}

func isExpectation(err error) bool {
	return errors.Is(err, errclass.ErrExpectation)
}

func codeDiff(a, b results.Code) []string {
	var out []string
	if a.ExecutableSHA256 != b.ExecutableSHA256 {
		out = append(out, fmt.Sprintf("the executable hashes to %s now, %s in the run", b.ExecutableSHA256, a.ExecutableSHA256))
	}
	if a.WorkingTree != nil && b.WorkingTree != nil && a.WorkingTree.SHA256 != b.WorkingTree.SHA256 {
		out = append(out, fmt.Sprintf("the working tree hashes to %s now, %s in the run", b.WorkingTree.SHA256, a.WorkingTree.SHA256))
	}
	return out
}

// processView is the deterministic part of a process record.
type processView struct {
	Condition string   `json:"condition"`
	Label     string   `json:"label"`
	Worker    string   `json:"worker"`
	ExitCode  int      `json:"exit_code"`
	Signal    string   `json:"signal,omitempty"`
	CrashedAt string   `json:"crashed_at,omitempty"`
	Points    []string `json:"points,omitempty"`
}

// runView is what a rerun compares: the derived result without its
// measurements, beside the deterministic part of every process.
type runView struct {
	Settings   json.RawMessage           `json:"settings"`
	Conditions []results.ConditionResult `json:"conditions"`
	Extra      json.RawMessage           `json:"extra,omitempty"`
	Findings   []results.Finding         `json:"findings,omitempty"`
	Plan       *results.PlanResult       `json:"plan,omitempty"`
	Pass       bool                      `json:"pass"`
	Processes  []processView             `json:"processes"`
}

// scheduled names the conditions of a recorded scenario result that the
// OS schedules, whose process records a rerun leaves out: as the result
// records them from format 6 on.
func scheduled(format int, rs results.ScenarioResult) map[string]bool {
	out := map[string]bool{}
	for _, c := range rs.Conditions {
		if c.Scheduled || format < results.FormatScheduled && scheduledByName(rs.Name, c.Name) {
			out[c.Name] = true
		}
	}
	return out
}

// scheduledByName is how a folder of format 5 or older said which
// conditions the OS schedules: by their names, which that format fixed.
// explore's timing-kill and timing-race conditions are named
// "…/timing-…", and pattern's random and concurrent classes
// "…/random" and "…/concurrent". Only the reader of such folders asks.
func scheduledByName(scenarioName, condition string) bool {
	switch scenarioName {
	case "explore":
		last := condition[strings.LastIndex(condition, "/")+1:]
		return strings.HasPrefix(last, "timing-")
	case "pattern":
		return strings.HasSuffix(condition, "/random") || strings.HasSuffix(condition, "/concurrent")
	}
	return false
}

// projection is the part of a scenario result and its records a rerun
// compares; the processes of the scheduled conditions are left out.
func projection(s results.ScenarioResult, rec results.Records, scheduled map[string]bool) runView {
	v := runView{Settings: s.Settings, Conditions: s.Conditions, Extra: s.Extra, Findings: s.Findings, Plan: s.Plan, Pass: s.Pass}
	for _, p := range rec.Processes {
		if scheduled[p.Condition] {
			continue
		}
		pv := processView{Condition: p.Condition, Label: p.Label, Worker: p.Worker, ExitCode: p.ExitCode, Signal: p.Signal}
		if rep, err := protocol.ParseReport(p.Stdout); err == nil {
			pv.CrashedAt, pv.Points = rep.CrashedAt, rep.Points
		}
		if p.KilledBy != "" {
			// A kill after a random delay lands wherever the scheduler
			// let the worker get to.
			pv.Points, pv.CrashedAt, pv.ExitCode, pv.Signal = nil, "", 0, "killed by the harness"
		}
		v.Processes = append(v.Processes, pv)
	}
	// Racing workers finish in any order; the multiset is what must match.
	sort.SliceStable(v.Processes, func(i, j int) bool {
		a, b := v.Processes[i], v.Processes[j]
		if a.Condition != b.Condition {
			return a.Condition < b.Condition
		}
		return a.Label < b.Label
	})
	return v
}
