package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"idemlab/cmd/help"
	"idemlab/experiments/all"
	"idemlab/experiments/scenario"
)

// topicCmds are the help topics as cobra has them: commands without Run,
// which "idemlab help" lists under "Additional help topics" and "idemlab
// help TOPIC" prints, rendered for the terminal.
func topicCmds(reg scenario.Registry) []*cobra.Command {
	var cmds []*cobra.Command
	for _, t := range help.Topics {
		c := &cobra.Command{Use: t.Name, Short: t.Short}
		c.SetHelpFunc(func(c *cobra.Command, _ []string) {
			md, err := help.Markdown(t.Name, generatedParts(c.Root(), reg))
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

// topicMarkdown is a topic's Markdown with its generated parts filled
// in: the text "idemlab help" renders and "idemlab docs" writes.
func topicMarkdown(name string) (string, error) {
	h := Hooks{Registry: all.Scenarios(nil)}
	return help.Markdown(name, generatedParts(newRootCmd(Streams{}, h), h.Registry))
}

// generatedParts are the parts of the topics made from the code; root
// is the command tree whose flags they list.
func generatedParts(root *cobra.Command, reg scenario.Registry) map[string]string {
	results, err := resultsReference()
	if err != nil {
		results = "(" + err.Error() + ")"
	}
	return map[string]string{
		"results":    results,
		"exit-codes": exitCodesMarkdown(),
		"input":      help.Generated("input"),
		"flags":      flagsMarkdown(root, reg),
	}
}

// flagsMarkdown lists experiment's flags as cobra holds them: its own,
// then each scenario's, in the registry's order, a flag several scenarios
// take under each.
func flagsMarkdown(root *cobra.Command, reg scenario.Registry) string {
	exp, _, err := root.Find([]string{"experiment"})
	if err != nil || exp == root {
		return "(no experiment command)"
	}
	scenarioFlag := map[string]bool{}
	for _, s := range reg {
		for _, f := range s.Flags() {
			scenarioFlag[f.Name] = true
		}
	}
	var b strings.Builder
	b.WriteString("| flag | what it does |\n|---|---|\n")
	exp.Flags().VisitAll(func(f *pflag.Flag) {
		if !scenarioFlag[f.Name] && !f.Hidden {
			fmt.Fprintf(&b, "| `--%s` | %s |\n", f.Name, mdCell(f.Usage))
		}
	})
	for _, s := range reg {
		fmt.Fprintf(&b, "\n`%s`:\n\n| flag | what it does |\n|---|---|\n", s.Name())
		for _, f := range s.Flags() {
			fmt.Fprintf(&b, "| `--%s` | %s |\n", f.Name, mdCell(f.Usage))
		}
	}
	return b.String()
}

// mdCell makes text safe for a Markdown table's cell.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}
