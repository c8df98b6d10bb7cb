package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
)

// RerunOptions say how to run the recorded scenarios again.
type RerunOptions struct {
	InputPath  string
	Executable string
	Workdir    string
	// TempDir is where the fresh results folder is made; empty means the
	// system default. The folder is removed afterwards.
	TempDir   string
	OnProcess func(harness.ProcessRecord)
	Limits    Limits
}

// RerunOutcome is the comparison of a folder with a fresh run.
type RerunOutcome struct {
	Scenarios []string
	// Diffs maps a scenario to go-cmp's (-recorded +rerun) report.
	Diffs map[string]string
}

// OK says whether the rerun reproduced every deterministic part.
func (o *RerunOutcome) OK() bool { return len(o.Diffs) == 0 }

// Rerun runs the folder's scenarios again with the same input into a
// temporary folder, through the same suite the experiment command uses,
// and compares what must not change: conditions, expected and observed
// figures, rows, exit codes and crash points. Times, pids, paths and
// timings are left out by each scenario's projection.
func Rerun(ctx context.Context, f *Folder, opts RerunOptions) (*RerunOutcome, error) {
	if f.Results == nil {
		return nil, errors.New("rerun: the folder's results.json is unreadable")
	}
	var names []string
	for _, s := range f.Results.Scenarios {
		names = append(names, s.Name)
	}
	out := &RerunOutcome{Scenarios: names, Diffs: map[string]string{}}
	if len(names) == 0 {
		return out, nil
	}
	tmp, err := os.MkdirTemp(opts.TempDir, "idemlab-rerun-")
	if err != nil {
		return nil, fmt.Errorf("%w: create rerun folder: %v", harness.ErrHarness, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "results")
	so := suite.Options{
		Out: dir, InputPath: opts.InputPath, Scenarios: names,
		Executable: opts.Executable, Workdir: opts.Workdir, TempDir: tmp,
		Stdout: io.Discard, Stderr: io.Discard, OnProcess: opts.OnProcess,
	}
	// The recorded settings, not the input file alone, say how the folder
	// was made: flags such as --items or --workers override the file.
	for _, s := range f.Results.Scenarios {
		if p, ok := plugins[s.Name]; ok && p.overrides != nil {
			if err := p.overrides(s, &so); err != nil {
				return nil, fmt.Errorf("%w: rerun: scenario %s: the recorded settings cannot be replayed: %v", harness.ErrExpectation, s.Name, err)
			}
		}
	}
	_, err = suite.Run(ctx, so)
	if err != nil && !errors.Is(err, harness.ErrExpectation) {
		return nil, fmt.Errorf("rerun: %w", err)
	}
	fresh, err := Load(dir, opts.Limits)
	if err != nil || fresh.Results == nil {
		return nil, fmt.Errorf("%w: rerun: cannot read the fresh results: %v", harness.ErrHarness, err)
	}
	for _, s := range f.Results.Scenarios {
		var fs *harness.ScenarioResult
		for i := range fresh.Results.Scenarios {
			if fresh.Results.Scenarios[i].Name == s.Name {
				fs = &fresh.Results.Scenarios[i]
			}
		}
		if fs == nil {
			out.Diffs[s.Name] = "scenario missing from the rerun"
			continue
		}
		a, err1 := project(f, s)
		b, err2 := project(fresh, *fs)
		if err1 != nil {
			out.Diffs[s.Name] = fmt.Sprintf("recorded folder: %v", err1)
			continue
		}
		if err2 != nil {
			out.Diffs[s.Name] = fmt.Sprintf("rerun: %v", err2)
			continue
		}
		if d := cmp.Diff(a, b); d != "" {
			out.Diffs[s.Name] = d
		}
	}
	return out, nil
}

// project picks the deterministic part of a scenario through its plug-in,
// or through the generic projection when it has none.
func project(f *Folder, s harness.ScenarioResult) (any, error) {
	if p, ok := plugins[s.Name]; ok && p.deterministic != nil {
		return p.deterministic(f, s)
	}
	return genericProjection(f, s)
}

// genericRun is the fallback projection: conditions and processes with every
// field whose name says it is volatile removed.
type genericRun struct {
	Settings   any
	Conditions []genericCond
	Processes  []ProcessView
}

type genericCond struct {
	Name               string
	Expected, Observed any
	Pass               bool
}

func genericProjection(f *Folder, s harness.ScenarioResult) (any, error) {
	g := genericRun{Settings: stripVolatile(s.Settings)}
	for _, c := range s.Conditions {
		g.Conditions = append(g.Conditions, genericCond{Name: c.Name, Expected: stripVolatile(c.Expected), Observed: stripVolatile(c.Observed), Pass: c.Pass})
	}
	g.Processes = processViews(f, s.Name)
	// Racing workers finish in any order; the set is what must match.
	sort.SliceStable(g.Processes, func(i, j int) bool {
		a, b := g.Processes[i], g.Processes[j]
		if a.Condition != b.Condition {
			return a.Condition < b.Condition
		}
		return a.Label < b.Label
	})
	return g, nil
}

// stripVolatile removes fields named like times, durations, pids and paths.
func stripVolatile(v any) any {
	c, err := canon(v)
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

func volatileKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"_ms", "_us", "_ns", "_seconds", "_sec", "_time", "_path", "_dir"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	switch k {
	case "pid", "pids", "path", "dir", "started_at", "ended_at", "finished_at", "timings", "timing", "elapsed", "duration", "argv":
		return true
	}
	return false
}
