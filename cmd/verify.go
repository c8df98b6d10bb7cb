package cmd

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"idemlab/experiments/backend"
	"idemlab/experiments/review"
)

// VerifyOptions are the verify command's flags.
type VerifyOptions struct {
	Streams Streams
	Input   string
	Exe     string
	Rerun   bool
	DSN     string
	hooks   Hooks
}

func newVerifyCmd(s Streams, h Hooks) *cobra.Command {
	opts := &VerifyOptions{Streams: s, hooks: h}
	c := &cobra.Command{
		Use:   "verify DIR [--input FILE] [--exe FILE] [--rerun [--dsn DSN]]",
		Short: "Check a results folder without trusting it",
		Long: `Check a results folder. Every figure, verdict and extra table in
results.json is derived again from observations.jsonl and raw-processes.jsonl
by the same fold and oracle the run used; every process line is tied to the
observation that uses it, and its command line, environment, exit status and
report to the settings; the settings are derived again from the folder's copy
of the input file and the recorded flag overrides. Links, special files,
truncated lines and oversized files are findings. Nothing is written to DIR.

--input FILE also checks that FILE is the input the folder was made from.
--exe FILE checks that FILE is the executable that made it. A folder made
by "go run" (or "go test") names a temporary binary that the go command
deleted, which no file can match; verify says so, and the working tree hash,
compared when verify runs inside the idemlab source tree, identifies the code.
--rerun runs the recorded scenarios again with the folder's input and
overrides, and compares settings, figures, verdicts, exit codes and crash
points (times, pids, paths and timings are measurements and are ignored).
Of a condition results.json records "scheduled": true (kills after a delay,
racing workers, which the OS schedules) it compares the figures but not the
processes; a folder of format 5 or older records no such flag, and its
conditions named .../timing-..., .../random or .../concurrent are taken as
scheduled, the rule of those formats.

Where its trust ends (what it re-derives, what it cross-checks, what it
takes on trust, and why --rerun is the answer to a consistent forgery):
"idemlab help evidence".

` + exitHelp("verify"),
		Args: exactlyOneFolder,
		RunE: func(c *cobra.Command, args []string) error {
			return runVerify(c, opts, args[0])
		},
	}
	c.Flags().StringVar(&opts.Input, "input", "", "an input file that must be the one the folder was made from (default: the folder's own input.json)")
	c.Flags().StringVar(&opts.Exe, "exe", "", "an executable that must be the one that made the folder")
	c.Flags().BoolVar(&opts.Rerun, "rerun", false, "run the scenarios again and compare")
	c.Flags().StringVar(&opts.DSN, backend.FlagDSN, "", "with --rerun of a folder made on PostgreSQL: an existing server's connection string to rerun on (default: start a throwaway cluster)")
	return c
}

func runVerify(c *cobra.Command, opts *VerifyOptions, dir string) error {
	_, wd, err := selfAndWorkdir(opts.hooks.Executable)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return review.RunVerify(ctx, review.VerifyConfig{
		Registry: opts.hooks.Registry, Dir: dir, InputPath: opts.Input, ExePath: opts.Exe,
		Rerun: opts.Rerun, DSN: opts.DSN, FindBinaries: opts.hooks.FindBinaries,
		Run: rerunFunc(opts.hooks, backend.Options{DSN: opts.DSN}, opts.Streams.Err), Workdir: wd, TempDir: opts.hooks.TempDir,
		Stdout: opts.Streams.Out,
	})
}
