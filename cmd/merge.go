package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"idemlab/cmd/help"
	"idemlab/experiments/merge"
	"idemlab/experiments/suite"
)

// MergeOptions are the merge command's flags.
type MergeOptions struct {
	Streams Streams
	Out     string
	Dirs    []string
	hooks   Hooks
}

func newMergeCmd(s Streams, h Hooks) *cobra.Command {
	opts := &MergeOptions{Streams: s, hooks: h}
	c := &cobra.Command{
		Use:   "merge --out DIR SHARD_DIR...",
		Short: "Join the shards' folders (--shard i/n) into one results folder",
		Long: `Join the results folders of explore, durability or pattern run as n shards
(--shard 1/n to --shard n/n, e.g. one per job of a CI matrix) into DIR, one
folder that verify accepts as a whole.

Every shard folder is verified first, as verify does; a shard whose own run
failed (verify exit 4) is accepted, since its verdict covers its part alone.
The folders must be the n parts of one plan: one executable, one input, the
same settings and flags but --shard, the same points discovered, every i
from 1 to n exactly once, and their trials the plan's, each once. The
records are joined unchanged, shard by shard (each shard keeps its own
process ids and environment), and every verdict is derived again over all
of them: a known-unsafe class must break in some shard, not in each.

A shard job run again (an engine's retry or requeue) finds its folder
there and exits 0, "shard i/n already done", so every engine may be
at-least-once. On Slurm, from a folder on the shared file system that
holds the built ./idemlab and input.json (the recipe the tests submit to
a real single-host cluster; "idemlab help sharding" has the others):

` + indent(slurmRecipe(), "  ") + `

` + exitHelp("merge"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dirs = args
			return runMerge(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Out, "out", "", "merged results folder to create (must not exist)")
	return c
}

// slurmRecipe is the Slurm recipe of the sharding topic (its block
// "slurm"): a job array of the shards, then the merge once every task
// ended well. The topic holds it, merge --help prints it, and
// TestSlurmRecipe submits it as it is. It is read when the command tree
// is built, not at every worker's start (each worker is this binary).
func slurmRecipe() string { return mustCodeBlock("sharding", "slurm") }

// mustCodeBlock is a code block of a help topic, which the binary embeds.
func mustCodeBlock(topic, name string) string {
	s, err := help.CodeBlock(topic, name)
	if err != nil {
		panic(err)
	}
	return s
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func runMerge(ctx context.Context, opts *MergeOptions) error {
	res, err := merge.Run(ctx, merge.Config{Registry: opts.hooks.Registry, Out: opts.Out, Dirs: opts.Dirs, Stdout: opts.Streams.Err})
	if res == nil {
		return err
	}
	suite.PrintFailures(opts.Streams.Err, suite.Failures(opts.hooks.Registry, res))
	fmt.Fprintln(opts.Streams.Out, resultLine(suite.Verdict(opts.hooks.Registry, res), fmt.Sprintf("%d shards merged into %s", len(res.Shards), opts.Out)))
	fmt.Fprintf(opts.Streams.Out, "Check it:   %s verify %s\n", selfName(), opts.Out)
	return err
}
