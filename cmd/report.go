package cmd

import (
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
		Use:   "report DIR [--html FILE] [--md FILE]",
		Short: "Render a results folder beside the articles' published tables",
		Long: `Render a results folder: per article, the published table beside the
reproduced figures with ✓/✗ per cell; per scenario, its settings, tables,
conditions and charts; the environment and the code identity. The figures
shown are derived from the folder's records, as verify derives them.

--html writes one self-contained page (inline SVG, no network fetches).
--md writes Markdown for a code host, with each chart saved as an SVG file
next to it. Without either, the Markdown (without charts) goes to stdout.

Exit codes:
  0  rendered
  1  rendered, but the folder does not verify (the findings are on the page), or results.json is unreadable
  2  usage error (DIR not a folder, the output's folder missing)`,
		Args: exactlyOneFolder,
		RunE: func(_ *cobra.Command, args []string) error {
			return runReport(opts, args[0])
		},
	}
	c.Flags().StringVar(&opts.HTML, "html", "", "write a self-contained HTML page to FILE")
	c.Flags().StringVar(&opts.MD, "md", "", "write Markdown to FILE (charts as FILE-stem-NAME.svg beside it)")
	return c
}

func runReport(opts *ReportOptions, dir string) error {
	return review.RunReport(review.ReportConfig{Registry: opts.hooks.Registry, Dir: dir, HTML: opts.HTML, MD: opts.MD, Stdout: opts.Streams.Out, Self: selfName()})
}
