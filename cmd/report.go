package cmd

import (
	"context"
	"github.com/spf13/cobra"

	"idemlab/experiments/review"
)

// ReportOptions are the report command's flags.
type ReportOptions struct {
	Streams Streams
	HTML    string
	MD      string
	hooks   Hooks
}

func newReportCmd(s Streams, h Hooks) *cobra.Command {
	opts := &ReportOptions{Streams: s, hooks: h}
	c := &cobra.Command{
		Use:   "report DIR [DIR...] [--html FILE] [--md FILE]",
		Short: "Draw a folder beside the articles' tables, or folders side by side",
		Long: `Render a results folder: per article, the published table beside the
reproduced figures with ✓/✗ per cell; per scenario, its settings, tables,
conditions and charts; the environment and the code identity. The figures
shown are derived from the folder's records, as verify derives them.

--html writes one self-contained page (inline SVG, no network fetches).
--md writes Markdown for a code host, with each chart saved as an SVG file
next to it. Without either, the Markdown (without charts) goes to stdout.

With several folders, e.g. one made on SQLite and one with --backend
postgres, the report sets them side by side instead: one column per folder,
headed by the database its workers read back (PostgreSQL's isolation and
synchronous_commit, SQLite's journal_mode and synchronous), one row per
scenario and condition, each cell the condition's verdict and its outcome
in a few words, or "not run" where the folder has no such condition. Every
folder is verified first; one that does not verify is named, nothing is
written, and report exits 1.

Run inside the idemlab source tree, the report compares the tree with the
run's working tree hash, as verify does; where they differ the page shows a
"code changed" badge and report still exits 0.

` + exitHelp("report"),
		Args: atLeastOneFolder,
		RunE: func(c *cobra.Command, args []string) error {
			return runReport(c.Context(), opts, args)
		},
	}
	c.Flags().StringVar(&opts.HTML, "html", "", "write a self-contained HTML page to FILE")
	c.Flags().StringVar(&opts.MD, "md", "", "write Markdown to FILE (charts as FILE-stem-NAME.svg beside it)")
	return c
}

func runReport(ctx context.Context, opts *ReportOptions, dirs []string) error {
	if len(dirs) > 1 {
		return review.RunCompare(ctx, review.CompareConfig{Registry: opts.hooks.Registry, Dirs: dirs, HTML: opts.HTML, MD: opts.MD, Stdout: opts.Streams.Out})
	}
	_, wd, err := selfAndWorkdir(opts.hooks.Executable)
	if err != nil {
		return err
	}
	return review.RunReport(ctx, review.ReportConfig{Registry: opts.hooks.Registry, Dir: dirs[0], HTML: opts.HTML, MD: opts.MD, Stdout: opts.Streams.Out, Self: selfName(), Workdir: wd})
}
