package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"idemlab/cmd/help"
)

// topicCmds are the help topics as cobra has them: commands without Run,
// which "idemlab help" lists under "Additional help topics" and "idemlab
// help TOPIC" prints, rendered for the terminal.
func topicCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, t := range help.Topics {
		c := &cobra.Command{Use: t.Name, Short: t.Short}
		c.SetHelpFunc(func(c *cobra.Command, _ []string) {
			md, err := topicMarkdown(t.Name)
			if err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "idemlab: %v\n", err)
				return
			}
			fmt.Fprint(c.OutOrStdout(), help.Terminal(md, help.Width(c.OutOrStdout())))
		})
		cmds = append(cmds, c)
	}
	return cmds
}

// TopicMarkdown is a topic's Markdown with its generated parts filled in:
// the page idemlab-docs writes, the text "idemlab help" renders.
func TopicMarkdown(name string) (string, error) {
	return topicMarkdown(name)
}

func topicMarkdown(name string) (string, error) {
	return help.Markdown(name, generatedParts())
}

// generatedParts are the parts of the topics made from the code.
func generatedParts() map[string]string {
	results, err := resultsReference()
	if err != nil {
		results = "(" + err.Error() + ")"
	}
	return map[string]string{
		"results":    results,
		"exit-codes": exitCodesMarkdown(),
		"input":      help.Generated("input"),
	}
}
