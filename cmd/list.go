package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// ListOptions are the list command's flags.
type ListOptions struct {
	Streams Streams
	hooks   Hooks
}

func newListCmd(s Streams, h Hooks) *cobra.Command {
	opts := &ListOptions{Streams: s, hooks: h}
	return &cobra.Command{
		Use:   "list",
		Short: "Print the scenarios and the flags each accepts",
		Long:  "Print every scenario with its summary and the experiment flags that override its input section.\n\n" + exitHelp("list"),
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runList(opts)
		},
	}
}

func runList(opts *ListOptions) error {
	w := opts.Streams.Out
	for _, s := range opts.hooks.Registry {
		optIn := ""
		if s.Caps().OptIn {
			optIn = " (opt-in: runs only with --scenario " + s.Name() + ")"
		}
		fmt.Fprintf(w, "%s%s\n  %s\n", s.Name(), optIn, s.Summary())
		for _, f := range s.Flags() {
			fmt.Fprintf(w, "  --%s  %s\n", f.Name, f.Usage)
		}
	}
	return nil
}
