package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"idemlab/cmd"
	"idemlab/cmd/help"
)

// TestDocsPages generates the man pages and the Markdown into temp
// folders, as "make docs" does, and checks that every command and every
// topic has its page, that a topic's Markdown page is the text "idemlab
// help" renders, and that no page holds a path of this machine.
func TestDocsPages(t *testing.T) {
	man, md := filepath.Join(t.TempDir(), "man"), filepath.Join(t.TempDir(), "md")
	if err := run(cmd.Root(os.DirFS("../..")), options{Man: man, Markdown: md}); err != nil {
		t.Fatal(err)
	}
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() || c.IsAdditionalHelpTopicCommand() {
			return
		}
		want = append(want, filepath.Join(md, strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"), filepath.Join(man, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd.Root(os.DirFS("../..")))
	for _, tp := range help.Topics {
		want = append(want, filepath.Join(md, "idemlab_help_"+tp.Name+".md"), filepath.Join(man, "idemlab-"+tp.Name+".7"))
	}
	if len(want) < 2*(6+len(help.Topics)) {
		t.Fatalf("expected pages of at least 6 commands and %d topics, listed %d", len(help.Topics), len(want))
	}
	wd, _ := os.Getwd()
	for _, p := range want {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("no page %s", filepath.Base(p))
			continue
		}
		for _, local := range []string{wd, filepath.Dir(wd), man, md} {
			if strings.Contains(string(b), local) {
				t.Errorf("%s holds a path of this machine: %s", filepath.Base(p), local)
			}
		}
	}
	for _, tp := range help.Topics {
		page, _ := os.ReadFile(filepath.Join(md, "idemlab_help_"+tp.Name+".md"))
		text, err := cmd.TopicMarkdown(tp.Name)
		if err != nil || string(page) != text {
			t.Errorf("the Markdown page of %s is not the topic's text (%v)", tp.Name, err)
		}
	}
	index, _ := os.ReadFile(filepath.Join(md, "idemlab.md"))
	for _, tp := range help.Topics {
		if !strings.Contains(string(index), "("+"idemlab_help_"+tp.Name+".md)") {
			t.Errorf("idemlab.md does not link the topic %s", tp.Name)
		}
	}
}
