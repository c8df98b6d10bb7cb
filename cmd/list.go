package cmd

import (
	"github.com/spf13/cobra"

	"idemlab/experiments/suite"
)

// ListOptions are the list command's flags.
type ListOptions struct {
	Streams Streams
}

func newListCmd(s Streams) *cobra.Command {
	opts := &ListOptions{Streams: s}
	return &cobra.Command{
		Use:   "list",
		Short: "Print the scenarios and their conditions",
		Long:  "Print every scenario with the conditions it runs.\n\n" + exitCodesHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runList(opts)
		},
	}
}

func runList(opts *ListOptions) error {
	suite.List(opts.Streams.Out)
	return nil
}
