package cmd

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
)

// ExperimentOptions are the experiment command's flags.
type ExperimentOptions struct {
	Streams   Streams
	Out       string
	Input     string
	Scenarios []string
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
	c.Flags().StringArrayVar(&opts.Scenarios, "scenario", nil, fmt.Sprintf("scenario to run, repeatable (default all: %v)", suite.Names()))
	return c
}

func runExperiment(c *cobra.Command, opts *ExperimentOptions) error {
	if opts.Out == "" {
		return fmt.Errorf("%w: --out is required", harness.ErrUsage)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: find own executable: %v", harness.ErrHarness, err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("%w: find working folder: %v", harness.ErrHarness, err)
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	so := opts.suite
	so.Out, so.InputPath, so.Scenarios = opts.Out, opts.Input, opts.Scenarios
	if so.Executable == "" {
		so.Executable = exe
	}
	so.Workdir = wd
	so.Stdout, so.Stderr = opts.Streams.Out, opts.Streams.Err
	_, err = suite.Run(ctx, so)
	return err
}
