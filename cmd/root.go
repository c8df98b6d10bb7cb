// Package cmd is the cobra wiring of the idemlab command. Each command binds
// its flags to an options struct and calls a run function; the work itself
// lives under experiments/.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"idemlab/experiments/backend"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"idemlab/experiments/all"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
)

// Streams are the injected standard streams.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Hooks carry what tests replace: the registry (to swap an oracle) and the
// executable workers re-execute (the test binary).
type Hooks struct {
	Registry   scenario.Registry
	Executable string
	TempDir    string
	// OnBackend, when set, sees the run's PostgreSQL server once it is
	// up; tests use it to check that nothing of it survives the run.
	OnBackend func(backend.Info)
	// FindBinaries, when set, replaces backend.FindBinaries where verify
	// --rerun checks for a server; tests make it fail.
	FindBinaries func() (string, error)
	// Patterns are the shipped pattern files the registry's explore runs,
	// by their paths from the module root: main's embedded copies; tests
	// give the source tree's.
	Patterns fs.FS
}

// The commands and topics are listed in the order they are added (the
// commands a newcomer runs first, then help.Topics' order: a newcomer's
// path first, the reference last), not sorted by name.
func init() { cobra.EnableCommandSorting = false }

func newRootCmd(s Streams, h Hooks) *cobra.Command {
	if h.Registry == nil {
		h.Registry = all.Scenarios(h.Patterns)
	}
	root := &cobra.Command{
		Use:   "idemlab",
		Short: "Test whether a message handler is idempotent: crashes, kills, races, power cuts, redelivery",
		Long: `idemlab tests whether a message handler does its work exactly once when it
crashes, is killed, races a second copy of itself, loses power or is
redelivered. It reproduces three published experiments about idempotent
processing and puts your own pattern file or handler program through the
same faults, with real worker processes and real SQLite files or PostgreSQL
servers, and checks every verdict against an oracle computed from the inputs.

Run "idemlab experiment --out results-local" (the articles' scenarios), then
"idemlab verify results-local". Your own pattern or program: "idemlab help
patterns", "idemlab help handlers". "idemlab help TOPIC" prints a topic of the
manual (listed below).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v (see %s --help)", errclass.ErrUsage, err, c.CommandPath())
	})
	root.AddCommand(newExperimentCmd(s, h), newListCmd(s, h), newVerifyCmd(s, h), newReportCmd(s, h), newMergeCmd(s, h), newResolveCmd(s), newDocsCmd(s, h))
	root.AddCommand(topicCmds(h.Registry)...)
	root.SetHelpCommand(newHelpCmd())
	return root
}

// Execute runs the command line and returns the process exit code. It is
// the one place where errors become exit codes. patterns are the shipped
// pattern files (Hooks.Patterns).
func Execute(ctx context.Context, args []string, s Streams, patterns fs.FS) int {
	return execute(ctx, args, s, Hooks{Patterns: patterns})
}

func execute(ctx context.Context, args []string, s Streams, h Hooks) int {
	root := newRootCmd(s, h)
	root.SetArgs(args)
	started := false
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	err := root.ExecuteContext(ctx)
	if err == nil {
		return errclass.ExitOK
	}
	fmt.Fprintf(s.Err, "idemlab: %v\n", err)
	return ExitCode(err, started)
}

// ExitCode maps an error to the documented exit code. Errors raised before
// a command started running (unknown command, bad arguments) are usage
// errors; unclassified errors from a running command are harness failures.
func ExitCode(err error, started bool) int {
	if err == nil {
		return errclass.ExitOK
	}
	for _, c := range errclass.Classes {
		if errors.Is(err, c.Err) {
			return c.Code
		}
	}
	if !started {
		return errclass.ExitUsage
	}
	return errclass.ExitHarness
}

// exactlyOneFolder is cobra's argument check with a message that says what
// to pass.
func exactlyOneFolder(c *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: %s needs one results folder, e.g. %s results-local (got %d arguments)", errclass.ErrUsage, c.Name(), c.CommandPath(), len(args))
	}
	return nil
}

func atLeastOneFolder(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s needs one or more results folders, e.g. %s results-sqlite results-postgres", errclass.ErrUsage, c.Name(), c.CommandPath())
	}
	return nil
}
