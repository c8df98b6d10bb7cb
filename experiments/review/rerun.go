package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/worker/protocol"
)

// RunFunc runs the named scenarios with the given input file and overrides
// into a new folder out, as the experiment command does. The caller wires
// it to the suite, so this package imports no scenario.
type RunFunc func(ctx context.Context, out, input string, scenarios []string, overrides map[string]string) error

// RerunOutcome is the comparison of a folder with a fresh run.
type RerunOutcome struct {
	Scenarios []string
	// Differences lists, per scenario, each deterministic field that the
	// fresh run gave differently, as "path: recorded A, rerun B".
	Differences map[string][]string
	// CodeChanged says how the code of the rerun differs from the run's.
	CodeChanged []string
}

// OK says whether the rerun reproduced every deterministic part.
func (o *RerunOutcome) OK() bool { return len(o.Differences) == 0 }

// Rerun runs each scenario of a verified folder again, with the folder's
// own input copy and its recorded overrides, and compares what must not
// change: settings, expected and observed figures, verdicts, and every
// process's worker, exit and crash points. Times, pids, paths, timings and
// busy retries are measurements and are left out.
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
	out := &RerunOutcome{Differences: map[string][]string{}}
	for i, rs := range f.Results.Scenarios {
		out.Scenarios = append(out.Scenarios, rs.Name)
		dir := filepath.Join(tmp, fmt.Sprintf("results-%d", i))
		if err := run(ctx, dir, input, []string{rs.Name}, rs.Overrides); err != nil && !isExpectation(err) {
			return nil, fmt.Errorf("rerun of scenario %s: %w", rs.Name, err)
		}
		fresh, err := Verify(dir, Options{Registry: opts.Registry, Limits: opts.Limits})
		if err != nil || fresh.Derived == nil || len(fresh.Derived.Scenarios) != 1 {
			return nil, fmt.Errorf("%w: rerun of scenario %s: cannot read the fresh folder: %w", errclass.ErrHarness, rs.Name, err)
		}
		if !fresh.OK() {
			return nil, fmt.Errorf("%w: rerun of scenario %s: the fresh folder does not verify: %s", errclass.ErrHarness, rs.Name, fresh.Findings[0])
		}
		a := projection(o.Derived.Scenarios[i], f.Records(rs.Name))
		b := projection(fresh.Derived.Scenarios[0], fresh.Folder.Records(rs.Name))
		for _, d := range results.DiffPaths(rs.Name, a, b) {
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

type runView struct {
	Settings   any           `json:"settings"`
	Conditions any           `json:"conditions"`
	Extra      any           `json:"extra,omitempty"`
	Pass       bool          `json:"pass"`
	Processes  []processView `json:"processes"`
}

func projection(s results.ScenarioResult, rec results.Records) runView {
	v := runView{Settings: stripVolatile(jsonRaw(s.Settings)), Conditions: stripVolatile(s.Conditions), Pass: s.Pass}
	if len(s.Extra) > 0 {
		v.Extra = stripVolatile(jsonRaw(s.Extra))
	}
	for _, p := range rec.Processes {
		if volatileCondition(p.Condition) {
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

// stripVolatile removes fields named like measurements: times, durations,
// timings, pids, paths and busy retries.
func stripVolatile(v any) any {
	c, err := results.Canon(v)
	if err != nil {
		return v
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, x := range t {
				if volatileKey(k) {
					continue
				}
				out[k] = walk(x)
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, x := range t {
				out[i] = walk(x)
			}
			return out
		}
		return v
	}
	return walk(c)
}

// volatileCondition says a condition's processes are scheduled by the OS,
// not by the seed: kills after a delay and racing workers. Such a
// condition's last name segment starts with "timing" (explore's
// "separate-commit/timing-kill"); its figures sit under "timing" keys.
func volatileCondition(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.HasPrefix(strings.ToLower(name), "timing")
}

func volatileKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"_ms", "_us", "_ns", "_seconds", "_time", "_path", "_dir", "_at_ms"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	for _, s := range []string{"timing", "busy", "ratio", "elapsed", "duration"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	switch k {
	case "pid", "pids", "path", "dir", "db", "started_at", "ended_at", "finished_at", "argv", "within_target", "receiver_url", "url":
		return true
	}
	return false
}
