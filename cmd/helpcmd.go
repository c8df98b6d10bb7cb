package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"idemlab/cmd/help"
	"idemlab/experiments/errclass"
)

// newHelpCmd is "idemlab help [COMMAND | TOPIC]": cobra's own help
// command, but a name that is neither a command nor a topic is a usage
// error (exit 2) in one line that lists the topics, where cobra printed
// the root's usage and exited 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | topic]",
		Short: "Help about any command, or a topic of the manual",
		Long: `Help prints a command's help, or a topic of the manual (the topics are
listed under "Additional help topics" of "idemlab help").`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			parent, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range parent.Commands() {
				if (sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand()) && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, _, err := c.Root().Find(args)
			if target == nil || err != nil {
				names := make([]string, len(help.Topics))
				for i, t := range help.Topics {
					names[i] = t.Name
				}
				return fmt.Errorf("%w: no command or help topic %q; the topics are %s (idemlab help lists the commands too)",
					errclass.ErrUsage, strings.Join(args, " "), strings.Join(names, ", "))
			}
			if target.Context() == nil {
				target.SetContext(c.Context())
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}
