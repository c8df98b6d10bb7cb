package cmd

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"idemlab/experiments/claim"
	"idemlab/experiments/harness"
	"idemlab/experiments/progress"
	"idemlab/experiments/suite"
)

// ExperimentOptions are the experiment command's flags.
type ExperimentOptions struct {
	Streams   Streams
	Out       string
	Input     string
	Scenarios []string
	// Claim holds the claim scenario's flags; Mutants is --mutants.
	Claim   claim.Overrides
	Mutants bool
	// Quiet is --quiet: never show progress.
	Quiet bool
	// Batch holds the batch scenario's flags.
	Batch BatchFlags
	// suite carries test hooks; the command line never sets it.
	suite suite.Options
}

func newExperimentCmd(s Streams, base suite.Options) *cobra.Command {
	opts := &ExperimentOptions{Streams: s, suite: base}
	c := &cobra.Command{
		Use:   "experiment --out DIR [--scenario NAME ...] [--input FILE]",
		Short: "Run the scenarios with real worker processes and write a results folder",
		Long: `Run the scenarios, each worker in a fresh child process of this same binary,
and write DIR/results.json, DIR/observations.jsonl and DIR/raw-processes.jsonl.

DIR must not exist, not even empty. The files are written into a hidden
sibling folder that is renamed to DIR only when all three are complete.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runExperiment(c, opts)
		},
	}
	c.Flags().StringVar(&opts.Out, "out", "", "results folder to create (must not exist)")
	c.Flags().StringVar(&opts.Input, "input", "input.json", "input file")
	c.Flags().BoolVar(&opts.Quiet, "quiet", false, "never show progress (it shows only when stderr is a terminal)")
	c.Flags().StringArrayVar(&opts.Scenarios, "scenario", nil, fmt.Sprintf("scenario to run, repeatable (default all: %v)", suite.Names()))
	c.Flags().IntVar(&opts.Claim.Workers, "workers", 0, "claim: racing worker processes (default: claim.workers in the input)")
	c.Flags().IntVar(&opts.Claim.Repetitions, "repetitions", 0, "claim: repetitions of every round (default: claim.repetitions in the input)")
	c.Flags().IntVar(&opts.Claim.MutantRepetitions, "mutant-repetitions", 0, "claim: repetitions of every round per mutant (default: claim.mutant_repetitions in the input)")
	c.Flags().BoolVar(&opts.Mutants, "mutants", true, "claim: run the mutant table (--mutants=false leaves it out)")
	bindBatchFlags(c, &opts.Batch)
	return c
}

func runExperiment(c *cobra.Command, opts *ExperimentOptions) error {
	if opts.Out == "" {
		return fmt.Errorf("%w: --out is required", harness.ErrUsage)
	}
	if err := opts.Claim.Validate(); err != nil {
		return fmt.Errorf("%w: %v", harness.ErrUsage, err)
	}
	exe, wd, err := selfAndWorkdir(opts.suite.Executable)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	so := opts.suite
	so.Out, so.InputPath, so.Scenarios = opts.Out, opts.Input, opts.Scenarios
	so.Claim = opts.Claim
	so.Claim.SkipMutants = !opts.Mutants
	so.Batch = opts.Batch.Overrides(c)
	so.Executable = exe
	so.Workdir = wd
	so.Stdout, so.Stderr = opts.Streams.Out, opts.Streams.Err
	if so.OnProcess == nil {
		var done func()
		so.OnProcess, done = progress.New(opts.Streams.Err, opts.Quiet, "experiment")
		defer done()
	}
	_, err = suite.Run(ctx, so)
	return err
}

// selfAndWorkdir returns the binary that workers re-execute (exe, unless
// empty, in which case this process's own executable) and the working
// folder, where the source tree is looked for.
func selfAndWorkdir(exe string) (string, string, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", "", fmt.Errorf("%w: find own executable: %v", harness.ErrHarness, err)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", fmt.Errorf("%w: find working folder: %v", harness.ErrHarness, err)
	}
	return exe, wd, nil
}
