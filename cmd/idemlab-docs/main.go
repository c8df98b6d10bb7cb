// Command idemlab-docs writes idemlab's manual as pages: a man page per
// command (section 1) and per help topic (section 7), and Markdown of the
// same (idemlab_COMMAND.md from the strings --help prints, via cobra/doc;
// idemlab_help_TOPIC.md from the Markdown "idemlab help TOPIC" renders;
// idemlab.md linking them all). "make docs" runs it; the pages are made
// on demand and never committed.
//
// It is a binary of its own so that cobra/doc's packages (go-md2man,
// blackfriday, yaml) never run their init in idemlab's workers:
// blackfriday's alone took 0.6 ms of every worker's start.
//
//	go run ./cmd/idemlab-docs --markdown DIR --man DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"idemlab/cmd"
	"idemlab/cmd/help"
)

type options struct {
	Man      string
	Markdown string
}

func main() {
	var opts options
	fs := flag.NewFlagSet("idemlab-docs", flag.ContinueOnError)
	fs.StringVar(&opts.Man, "man", "", "write man pages into `DIR`")
	fs.StringVar(&opts.Markdown, "markdown", "", "write Markdown pages into `DIR`")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() > 0 || opts.Man == "" && opts.Markdown == "" {
		fmt.Fprintln(os.Stderr, "usage: idemlab-docs [--man DIR] [--markdown DIR] (one or both)")
		os.Exit(2)
	}
	if err := run(cmd.Root(os.DirFS(".")), opts); err != nil {
		fmt.Fprintf(os.Stderr, "idemlab-docs: %v\n", err)
		os.Exit(1)
	}
}

func run(root *cobra.Command, opts options) error {
	root.DisableAutoGenTag = true
	for _, dir := range []string{opts.Man, opts.Markdown} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	topics := map[string]string{}
	for _, t := range help.Topics {
		md, err := cmd.TopicMarkdown(t.Name)
		if err != nil {
			return err
		}
		topics[t.Name] = md
	}
	if opts.Markdown != "" {
		if err := docsMarkdown(root, opts.Markdown, topics); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "Markdown pages in %s, starting at %s\n", opts.Markdown, filepath.Join(opts.Markdown, "idemlab.md"))
	}
	if opts.Man != "" {
		if err := docsMan(root, opts.Man, topics); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "man pages in %s (man -l %s)\n", opts.Man, filepath.Join(opts.Man, "idemlab.1"))
	}
	return nil
}

// topicPage is a topic's Markdown page name.
func topicPage(name string) string { return "idemlab_help_" + name + ".md" }

func docsMarkdown(root *cobra.Command, dir string, topics map[string]string) error {
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return err
	}
	var index strings.Builder
	index.WriteString("\n### Help topics\n\n")
	for _, t := range help.Topics {
		fmt.Fprintf(&index, "* [idemlab help %s](%s)\t - %s\n", t.Name, topicPage(t.Name), t.Short)
		if err := os.WriteFile(filepath.Join(dir, topicPage(t.Name)), []byte(topics[t.Name]), 0o644); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "idemlab.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(index.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func docsMan(root *cobra.Command, dir string, topics map[string]string) error {
	header := &doc.GenManHeader{Title: "IDEMLAB", Section: "1", Source: "idemlab", Manual: "idemlab manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return err
	}
	for _, t := range help.Topics {
		page := fmt.Sprintf("%% \"IDEMLAB-%s\" \"7\" \"\" \"idemlab\" \"idemlab manual\"\n# NAME\nidemlab-%s \\- %s\n\n%s\n# SEE ALSO\n**idemlab(1)**\n",
			strings.ToUpper(t.Name), t.Name, t.Short, topics[t.Name])
		if err := os.WriteFile(filepath.Join(dir, "idemlab-"+t.Name+".7"), md2man.Render([]byte(page)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
