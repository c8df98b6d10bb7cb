// Package cmd is the cobra wiring of the idemlab command. Each command binds
// its flags to an options struct and calls a run function; the work itself
// lives under experiments/.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
)

// Streams are the injected standard streams.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

const exitCodesHelp = `Exit codes:
  0  all expectations met
  1  an expectation failed (results are still written, with pass: false)
  2  usage or input error (bad flag, bad input.json, --out exists); nothing is written
  3  the harness itself failed (e.g. a worker died in a way the protocol does not allow); nothing is written`

// NewRootCmd builds the command tree.
func NewRootCmd(s Streams) *cobra.Command {
	return newRootCmd(s, suite.Options{})
}

// newRootCmd builds the command tree; base carries test hooks into the
// experiment command.
func newRootCmd(s Streams, base suite.Options) *cobra.Command {
	root := &cobra.Command{
		Use:   "idemlab",
		Short: "Reproduce idempotent-processing experiments with real processes and real SQLite files",
		Long: `idemlab reproduces three published experiments about idempotent processing
(redelivery after a crash, batch resume with a step journal, TTL claims) from
real child processes and real SQLite files, and checks every observation
against an oracle computed from the inputs.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v", harness.ErrUsage, err)
	})
	root.AddCommand(newExperimentCmd(s, base), newListCmd(s), newVerifyCmd(s, base.Executable), newReportCmd(s), newResolveCmd(s))
	return root
}

// Execute runs the command line and returns the process exit code. It is
// the one place where errors become exit codes.
func Execute(ctx context.Context, args []string, s Streams) int {
	return execute(ctx, args, s, suite.Options{})
}

func execute(ctx context.Context, args []string, s Streams, base suite.Options) int {
	root := newRootCmd(s, base)
	root.SetArgs(args)
	started := false
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	err := root.ExecuteContext(ctx)
	if err == nil {
		return harness.ExitOK
	}
	fmt.Fprintf(s.Err, "idemlab: %v\n", err)
	return ExitCode(err, started)
}

// ExitCode maps an error to the documented exit code. Errors raised before
// a command started running (unknown command, bad arguments) are usage
// errors; unclassified errors from a running command are harness failures.
func ExitCode(err error, started bool) int {
	switch {
	case err == nil:
		return harness.ExitOK
	case errors.Is(err, harness.ErrUsage):
		return harness.ExitUsage
	case errors.Is(err, harness.ErrExpectation):
		return harness.ExitExpectation
	case errors.Is(err, harness.ErrHarness):
		return harness.ExitHarness
	case !started:
		return harness.ExitUsage
	}
	return harness.ExitHarness
}
