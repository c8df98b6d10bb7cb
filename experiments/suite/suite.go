// Package suite runs the chosen scenarios into one results folder. It owns
// the order of work that makes a run trustworthy: validate everything
// before any child runs, write into a staging folder, and rename it into
// place only when all three files are complete.
package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"idemlab/experiments/batch"
	"idemlab/experiments/claim"
	"idemlab/experiments/harness"
	"idemlab/experiments/redelivery"
)

// Options are the experiment command's settings.
type Options struct {
	Out       string
	InputPath string
	// Scenarios to run; empty means all, in the registry's order.
	Scenarios []string
	// Executable is the harness binary re-executed for workers.
	Executable string
	// Workdir is where the source tree is looked for, for the code hash.
	Workdir string
	// TempDir holds the scenarios' scratch databases; empty means the
	// system default.
	TempDir string
	Stdout  io.Writer
	Stderr  io.Writer
	// RedeliveryOracle replaces the redelivery oracle; tests use it to show
	// that a wrong expectation fails the run.
	RedeliveryOracle func(redelivery.Condition) []redelivery.Delivery
	// OnProcess is called after each child is recorded; the command line
	// uses it to show progress.
	OnProcess func(harness.ProcessRecord)
	// Claim holds the claim flags, which override input.json.
	Claim claim.Overrides
	// ClaimOracle replaces the claim oracle; tests use it to show that a
	// wrong expectation fails the run.
	ClaimOracle claim.Oracle
	// Batch holds the batch flags, which override input.json.
	Batch batch.Overrides
	// BatchOracle replaces the batch oracle; tests use it to show that a
	// wrong expectation fails the run.
	BatchOracle func(batch.Params) batch.Outcome
}

// env is what a scenario gets from the suite.
type env struct {
	opts     Options
	input    Input
	runner   *harness.Runner
	recorder *harness.Recorder
}

// scenario is one entry of the registry.
type scenario struct {
	name       string
	summary    string
	conditions func() []string
	// check validates the scenario's section of input.json.
	check func(Input) error
	// override, when set, puts the scenario's flags over its checked
	// section and validates the result, before any child runs.
	override func(in *Input, o Options) error
	run      func(ctx context.Context, e env) (harness.ScenarioResult, error)
	table    func(harness.ScenarioResult) ([]string, [][]string)
}

var registry = []scenario{
	{
		name:    redelivery.Name,
		summary: "article 000: separate commits vs one transaction, crash, redelivery to a fresh process",
		conditions: func() []string {
			var names []string
			for _, c := range redelivery.Conditions() {
				names = append(names, c.Name)
			}
			return names
		},
		check: func(in Input) error { return section(redelivery.Name, in.Redelivery) },
		run: func(ctx context.Context, e env) (harness.ScenarioResult, error) {
			return redelivery.Run(ctx, redelivery.Config{
				Runner: e.runner, Recorder: e.recorder, Input: *e.input.Redelivery,
				Oracle: e.opts.RedeliveryOracle, TempDir: e.opts.TempDir,
			})
		},
		table: redelivery.Table,
	},
	{
		name:       batch.Name,
		summary:    "article 002: a batch stopped at item K, rerun all vs resumed with a step journal, against a real HTTP receiver",
		conditions: batchConditions,
		check:      func(in Input) error { return section(batch.Name, in.Batch) },
		override: func(in *Input, o Options) error {
			merged := o.Batch.Apply(*in.Batch)
			in.Batch = &merged
			return merged.Validate()
		},
		run: func(ctx context.Context, e env) (harness.ScenarioResult, error) {
			return batch.Run(ctx, batch.Config{
				Runner: e.runner, Recorder: e.recorder, Input: *e.input.Batch,
				Oracle: e.opts.BatchOracle, TempDir: e.opts.TempDir,
			})
		},
		table: batch.Table,
	},
	{
		name:       claim.Name,
		summary:    "article 003: N processes race to claim one fingerprint, DO NOTHING vs the TTL upsert, plus the five mutants",
		conditions: claim.Conditions,
		check:      func(in Input) error { return section(claim.Name, in.Claim) },
		override: func(in *Input, o Options) error {
			merged := in.Claim.With(o.Claim)
			in.Claim = &merged
			return merged.Validate()
		},
		run: func(ctx context.Context, e env) (harness.ScenarioResult, error) {
			return claim.Run(ctx, claim.Config{
				Runner: e.runner, Recorder: e.recorder, Input: *e.input.Claim,
				Mutants: !e.opts.Claim.SkipMutants, Oracle: e.opts.ClaimOracle, TempDir: e.opts.TempDir,
			})
		},
		table: claim.Table,
	},
}

// Names lists the scenario names in run order.
func Names() []string {
	var out []string
	for _, s := range registry {
		out = append(out, s.name)
	}
	return out
}

// List prints every scenario and its conditions.
func List(w io.Writer) {
	for _, s := range registry {
		fmt.Fprintf(w, "%s\t%s\n", s.name, s.summary)
		for _, c := range s.conditions() {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
}

func choose(names []string) ([]scenario, error) {
	if len(names) == 0 {
		return registry, nil
	}
	var out []scenario
	seen := map[string]bool{}
	for _, n := range names {
		found := false
		for _, s := range registry {
			if s.name == n {
				found = true
				if !seen[n] {
					out = append(out, s)
					seen[n] = true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: --scenario %q: unknown (known: %s)", harness.ErrUsage, n, strings.Join(Names(), ", "))
		}
	}
	return out, nil
}

// Run runs the scenarios and writes the results folder. It returns the
// results even when an expectation failed; the error then wraps
// harness.ErrExpectation.
func Run(ctx context.Context, opts Options) (*harness.Results, error) {
	chosen, err := choose(opts.Scenarios)
	if err != nil {
		return nil, err
	}
	input, inputMeta, err := LoadInput(opts.InputPath, chosen)
	if err != nil {
		return nil, err
	}
	for _, sc := range chosen {
		if sc.override == nil {
			continue
		}
		if err := sc.override(&input, opts); err != nil {
			return nil, fmt.Errorf("%w: after flag overrides: %v", harness.ErrUsage, err)
		}
	}
	out, err := harness.PrepareOutput(opts.Out)
	if err != nil {
		return nil, err
	}
	res, err := runInto(ctx, opts, chosen, input, inputMeta, out)
	if err != nil {
		out.Abort()
		return nil, err
	}
	if err := out.Commit(); err != nil {
		out.Abort()
		return nil, err
	}
	printSummary(opts.Stdout, res, chosen, opts.Out)
	if !res.Pass {
		for _, s := range res.Scenarios {
			for _, c := range s.Conditions {
				if !c.Pass {
					fmt.Fprintf(opts.Stderr, "%s/%s: observed differs from expected (-expected +observed):\n%s", s.Name, c.Name, c.Diff)
				}
			}
		}
		return res, fmt.Errorf("%w: %s; results written to %s with pass: false", harness.ErrExpectation, strings.Join(res.Failures(), ", "), opts.Out)
	}
	return res, nil
}

func runInto(ctx context.Context, opts Options, chosen []scenario, input Input, inputMeta harness.Inputs, out *harness.Output) (*harness.Results, error) {
	code, err := harness.CodeHashes(opts.Executable, opts.Workdir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", harness.ErrHarness, err)
	}
	rec, err := harness.NewRecorder(out.Staging)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", harness.ErrHarness, err)
	}
	res := &harness.Results{
		Tool: harness.ToolInfo(opts.Workdir), StartedAt: time.Now().UTC().Format(time.RFC3339),
		Environment: harness.Env(), Inputs: inputMeta, Code: code, Pass: true,
		Scenarios: []harness.ScenarioResult{},
	}
	e := env{opts: opts, input: input, runner: &harness.Runner{Executable: opts.Executable, Recorder: rec, OnProcess: opts.OnProcess}, recorder: rec}
	for _, s := range chosen {
		sr, err := s.run(ctx, e)
		if err != nil {
			rec.Close()
			if !errors.Is(err, harness.ErrHarness) && !errors.Is(err, harness.ErrUsage) {
				err = fmt.Errorf("%w: scenario %s: %v", harness.ErrHarness, s.name, err)
			}
			return nil, err
		}
		res.Scenarios = append(res.Scenarios, sr)
		res.Pass = res.Pass && sr.Pass
	}
	if err := rec.Close(); err != nil {
		return nil, fmt.Errorf("%w: %v", harness.ErrHarness, err)
	}
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if err := out.WriteResults(res); err != nil {
		return nil, err
	}
	return res, nil
}

func printSummary(w io.Writer, res *harness.Results, chosen []scenario, dir string) {
	for i, sr := range res.Scenarios {
		fmt.Fprintf(w, "== %s\n", sr.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header, rows := chosen[i].table(sr)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			// A row with no cells prints as an empty line, which ends
			// tabwriter's column blocks: a second table in one scenario
			// is then aligned on its own.
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	verdict := "PASS"
	if !res.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s: results in %s\n", verdict, dir)
	fmt.Fprintf(w, "Check it:   idemlab verify %s   (add --rerun to run it again and compare)\n", dir)
	fmt.Fprintf(w, "Read it:    idemlab report %s --html %s\n", dir, filepath.Join(dir, "report.html"))
}
