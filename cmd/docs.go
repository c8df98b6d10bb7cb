package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"idemlab/cmd/help"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
)

// The manual's pages are written here from cobra's command tree and the
// help topics, without cobra/doc: its packages' init functions ran in
// every worker (each worker is this binary), and the pages need little
// of it. A command's page holds its Use, Short, Long, Example, its own
// and inherited flags as pflag prints them, and its neighbours; a topic's
// page is the Markdown "idemlab help TOPIC" renders.

type docsOptions struct {
	Man      string
	Markdown string
}

func newDocsCmd(s Streams, h Hooks) *cobra.Command {
	var o docsOptions
	c := &cobra.Command{
		Use:   "docs --markdown DIR --man DIR",
		Short: "Write every command's and topic's page, as Markdown and man pages",
		Long: `docs writes a page for every command (its --help, as Markdown and as a man
page of section 1) and for every help topic (the text "idemlab help TOPIC"
prints, as Markdown and as a man page of section 7). The Markdown starts at
DIR/idemlab.md; the man pages at DIR/idemlab.1. Give one of the two
folders or both; a folder is made if it does not exist, and pages already
in it are replaced. The pages are made from the code on demand and not
committed ("make docs" writes them into manual/).

` + exitHelp("docs"),
		Example: `  idemlab docs --markdown manual/markdown --man manual/man
  man -l manual/man/idemlab.1`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.Man == "" && o.Markdown == "" {
				return fmt.Errorf("%w: docs needs --markdown DIR, --man DIR or both", errclass.ErrUsage)
			}
			return writeDocs(c.Root(), h.Registry, o, s.Err)
		},
	}
	c.Flags().StringVar(&o.Markdown, "markdown", "", "write Markdown pages into `DIR` (start at DIR/idemlab.md)")
	c.Flags().StringVar(&o.Man, "man", "", "write man pages into `DIR` (man -l DIR/idemlab.1)")
	return c
}

// docsCommands are the commands that get a page, root first, each before
// its subcommands: the available ones, not the topics (pages of their
// own) nor help.
func docsCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	return out
}

// Page names: idemlab_verify.md and idemlab-verify.1 for a command,
// idemlab_help_TOPIC.md and idemlab-TOPIC.7 for a topic.
func markdownPage(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}
func manName(c *cobra.Command) string      { return strings.ReplaceAll(c.CommandPath(), " ", "-") }
func topicMarkdownPage(name string) string { return "idemlab_help_" + name + ".md" }

func writeDocs(root *cobra.Command, reg scenario.Registry, o docsOptions, stderr interface{ Write([]byte) (int, error) }) error {
	topics := map[string]string{}
	gen := generatedParts(root, reg)
	for _, t := range help.Topics {
		md, err := help.Markdown(t.Name, gen)
		if err != nil {
			return err
		}
		topics[t.Name] = md
	}
	pages := map[string]string{}
	if o.Markdown != "" {
		for _, c := range docsCommands(root) {
			pages[filepath.Join(o.Markdown, markdownPage(c))] = commandMarkdown(c)
		}
		for _, t := range help.Topics {
			pages[filepath.Join(o.Markdown, topicMarkdownPage(t.Name))] = topics[t.Name]
		}
	}
	if o.Man != "" {
		for _, c := range docsCommands(root) {
			pages[filepath.Join(o.Man, manName(c)+".1")] = commandMan(c)
		}
		for _, t := range help.Topics {
			pages[filepath.Join(o.Man, "idemlab-"+t.Name+".7")] = topicMan(t, topics[t.Name])
		}
	}
	for _, dir := range []string{o.Markdown, o.Man} {
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
	}
	for path, text := range pages {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	if o.Markdown != "" {
		fmt.Fprintf(stderr, "Markdown pages in %s, starting at %s\n", o.Markdown, filepath.Join(o.Markdown, "idemlab.md"))
	}
	if o.Man != "" {
		fmt.Fprintf(stderr, "man pages in %s (man -l %s)\n", o.Man, filepath.Join(o.Man, "idemlab.1"))
	}
	return nil
}

// flagUsages is what --help prints of a flag set, "" for none.
func flagUsages(fs *pflag.FlagSet) string {
	if !fs.HasAvailableFlags() {
		return ""
	}
	return strings.TrimRight(fs.FlagUsages(), "\n")
}

// seeAlso are a command's parent and subcommands.
func seeAlso(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	if c.HasParent() {
		out = append(out, c.Parent())
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			out = append(out, sub)
		}
	}
	return out
}

func commandMarkdown(c *cobra.Command) string {
	c.InitDefaultHelpFlag()
	var b strings.Builder
	fence := func(title, body string) {
		if body != "" {
			fmt.Fprintf(&b, "### %s\n\n```\n%s\n```\n\n", title, body)
		}
	}
	fmt.Fprintf(&b, "## %s\n\n%s\n\n", c.CommandPath(), c.Short)
	long := c.Long
	if long == "" {
		long = c.Short
	}
	b.WriteString("### Synopsis\n\n")
	for _, para := range paragraphs(long) {
		if kept(para) {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", para)
		} else {
			fmt.Fprintf(&b, "%s\n\n", para)
		}
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
	}
	fence("Examples", strings.TrimRight(c.Example, "\n"))
	fence("Options", flagUsages(c.NonInheritedFlags()))
	fence("Options inherited from parent commands", flagUsages(c.InheritedFlags()))
	b.WriteString("### SEE ALSO\n\n")
	for _, other := range seeAlso(c) {
		fmt.Fprintf(&b, "* [%s](%s)\t - %s\n", other.CommandPath(), markdownPage(other), other.Short)
	}
	if !c.HasParent() {
		b.WriteString("\n### Help topics\n\n")
		for _, t := range help.Topics {
			fmt.Fprintf(&b, "* [idemlab help %s](%s)\t - %s\n", t.Name, topicMarkdownPage(t.Name), t.Short)
		}
	}
	return b.String()
}

// roff escapes text for a man page: a backslash, a dash (a minus in
// options), a line that would start a request (a dot or an apostrophe),
// and every character past ASCII as its Unicode escape, so that groff
// reads the page in any input encoding.
func roff(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			b.WriteString(`\&`)
		}
		for _, r := range line {
			switch {
			case r == '\\':
				b.WriteString(`\e`)
			case r == '-':
				b.WriteString(`\-`)
			case r == '\t':
				b.WriteString("        ")
			case r > 126:
				fmt.Fprintf(&b, `\[u%04X]`, r)
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// paragraphs are text's paragraphs, split at blank lines.
func paragraphs(text string) []string {
	var out []string
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if para = strings.Trim(para, "\n"); para != "" {
			out = append(out, para)
		}
	}
	return out
}

// kept says a paragraph has an indented line (a table, a list of exit
// codes): it is printed as it is, not filled.
func kept(para string) bool {
	for _, line := range strings.Split(para, "\n") {
		if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
			return true
		}
	}
	return false
}

// roffText is prose for a man page: paragraphs are filled, kept ones
// are printed as they are.
func roffText(text string) string {
	var b strings.Builder
	for _, para := range paragraphs(text) {
		if kept(para) {
			fmt.Fprintf(&b, ".PP\n.nf\n%s\n.fi\n", roff(para))
		} else {
			fmt.Fprintf(&b, ".PP\n%s\n", roff(para))
		}
	}
	return b.String()
}

func roffBlock(title, body string) string {
	if body == "" {
		return ""
	}
	return fmt.Sprintf(".SH %s\n.nf\n%s\n.fi\n", title, roff(body))
}

func manHeader(name, section string) string {
	return fmt.Sprintf(".TH \"%s\" \"%s\" \"\" \"idemlab\" \"idemlab manual\"\n", strings.ToUpper(name), section)
}

func commandMan(c *cobra.Command) string {
	c.InitDefaultHelpFlag()
	var b strings.Builder
	b.WriteString(manHeader(manName(c), "1"))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(manName(c)), roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n\\fB%s\\fP\n.fi\n", roff(c.UseLine()))
	long := c.Long
	if long == "" {
		long = c.Short
	}
	b.WriteString(".SH DESCRIPTION\n" + roffText(long))
	b.WriteString(roffBlock("OPTIONS", flagUsages(c.NonInheritedFlags())))
	b.WriteString(roffBlock("OPTIONS INHERITED FROM PARENT COMMANDS", flagUsages(c.InheritedFlags())))
	b.WriteString(roffBlock("EXAMPLE", strings.TrimRight(c.Example, "\n")))
	var refs []string
	for _, other := range seeAlso(c) {
		refs = append(refs, fmt.Sprintf(".BR %s (1)", roff(manName(other))))
	}
	if !c.HasParent() {
		for _, t := range help.Topics {
			refs = append(refs, fmt.Sprintf(".BR idemlab\\-%s (7)", roff(t.Name)))
		}
	}
	if len(refs) > 0 {
		b.WriteString(".SH SEE ALSO\n" + strings.Join(refs, ",\n") + "\n")
	}
	return b.String()
}

// topicMan is a topic's man page: its headings become the page's
// sections (the title, level 1, is the NAME line), and the text between
// them is rendered as "idemlab help" renders it, at 72 columns (man
// indents it by 7).
func topicMan(t help.Topic, md string) string {
	var b strings.Builder
	b.WriteString(manHeader("idemlab-"+t.Name, "7"))
	fmt.Fprintf(&b, ".SH NAME\nidemlab\\-%s \\- %s\n", roff(t.Name), roff(t.Short))
	described := false
	var body []string
	flush := func() {
		text := strings.Trim(help.Terminal(strings.Join(body, "\n"), 72), "\n")
		body = body[:0]
		if text == "" {
			return
		}
		if !described {
			b.WriteString(".SH DESCRIPTION\n")
			described = true
		}
		fmt.Fprintf(&b, ".nf\n%s\n.fi\n", roff(text))
	}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if fenced || level == 0 || !strings.HasPrefix(line[level:], " ") {
			body = append(body, line)
			continue
		}
		flush()
		title := help.Plain(strings.TrimSpace(line[level:]))
		switch {
		case level == 1 && !described:
			b.WriteString(".SH DESCRIPTION\n")
		case level <= 2:
			fmt.Fprintf(&b, ".SH %s\n", roff(strings.ToUpper(title)))
		default:
			fmt.Fprintf(&b, ".SS %s\n", roff(title))
		}
		described = true
	}
	flush()
	b.WriteString(".SH SEE ALSO\n.BR idemlab (1)\n")
	return b.String()
}
