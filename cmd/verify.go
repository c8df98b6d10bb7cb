package cmd

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"idemlab/experiments/review"
)

// VerifyOptions are the verify command's flags.
type VerifyOptions struct {
	Streams Streams
	Input   string
	Rerun   bool
	Quiet   bool
	// executable replaces the re-executed binary; tests set it.
	executable string
}

const verifyExitHelp = `Exit codes:
  0  the folder verifies
  1  verification failed; each finding names the file and the field
  2  usage error (bad flag, missing --input file, DIR not a folder)
  3  the harness failed while rerunning`

func newVerifyCmd(s Streams, executable string) *cobra.Command {
	opts := &VerifyOptions{Streams: s, executable: executable}
	c := &cobra.Command{
		Use:   "verify DIR [--input FILE] [--rerun] [--quiet]",
		Short: "Check a results folder without trusting it",
		Long: `Check a results folder: results.json against the published JSON Schema,
every JSONL line, the SHA-256 of the input file and of the source tree (when
present), that each condition's figures match observations.jsonl, that each
observed process is in raw-processes.jsonl with the same exit code, and that
every pass flag agrees with its parts. Links, special files, truncated lines
and oversized files are refused. Nothing is written into DIR.

With --rerun the recorded scenarios run again with the same input into a
temporary folder and their deterministic parts (row counts, exit codes, crash
points, verdicts) are compared; times, pids and paths are ignored.

` + verifyExitHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runVerify(c, opts, args[0])
		},
	}
	c.Flags().StringVar(&opts.Input, "input", "input.json", "input file whose hash must match the recorded one")
	c.Flags().BoolVar(&opts.Rerun, "rerun", false, "run the recorded scenarios again and compare")
	c.Flags().BoolVar(&opts.Quiet, "quiet", false, "never show progress")
	return c
}

func runVerify(c *cobra.Command, opts *VerifyOptions, dir string) error {
	exe, wd, err := selfAndWorkdir(opts.executable)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return review.RunVerify(ctx, review.VerifyConfig{
		Dir: dir, InputPath: opts.Input, Rerun: opts.Rerun, Quiet: opts.Quiet,
		Executable: exe, Workdir: wd, Stdout: opts.Streams.Out, Stderr: opts.Streams.Err,
	})
}
