package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"idemlab/cmd/help"
)

// TestDocsPages runs "idemlab docs" into temp folders and checks that
// every command (as cobra's tree holds it when idemlab runs, completion
// included) and every topic has a Markdown page and a man page; that a
// command's pages name each of its flags, a topic's Markdown page is the
// text "idemlab help" renders, and idemlab.md links every page; that
// groff reads each man page without a warning; and that no page holds a
// path of this machine.
func TestDocsPages(t *testing.T) {
	t.Parallel()
	man, md := filepath.Join(t.TempDir(), "man"), filepath.Join(t.TempDir(), "md")
	if r := execIn(t, Hooks{}, "docs", "--man", man, "--markdown", md); r.code != 0 {
		t.Fatalf("idemlab docs: exit %d\n%s", r.code, r.stderr)
	}
	root := newRootCmd(Streams{}, withPatterns(Hooks{}))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	type page struct{ path, mustHold string }
	var want []page
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if _, topic := help.Lookup(c.Name()); c.Hidden || c.Name() == "help" || topic && !c.Runnable() {
			return
		}
		names := strings.Fields(c.CommandPath())
		want = append(want, page{filepath.Join(md, strings.Join(names, "_")+".md"), c.Short}, page{filepath.Join(man, strings.Join(names, "-")+".1"), roff(c.Short)})
		for _, fs := range []*pflag.FlagSet{c.NonInheritedFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					want = append(want, page{filepath.Join(md, strings.Join(names, "_")+".md"), "--" + f.Name}, page{filepath.Join(man, strings.Join(names, "-")+".1"), `\-\-` + roff(f.Name)})
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, tp := range help.Topics {
		want = append(want, page{filepath.Join(md, "idemlab_help_"+tp.Name+".md"), "# "}, page{filepath.Join(man, "idemlab-"+tp.Name+".7"), roff(tp.Short)})
	}
	if len(want) < 2*(7+len(help.Topics)) {
		t.Fatalf("expected pages of at least 7 commands and %d topics, listed %d", len(help.Topics), len(want))
	}
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	local := []string{wd, filepath.Dir(wd), man, md}
	if home != "" && home != "/" {
		local = append(local, home)
	}
	index, _ := os.ReadFile(filepath.Join(md, "idemlab.md"))
	for _, p := range want {
		b, err := os.ReadFile(p.path)
		if err != nil {
			t.Errorf("no page %s", filepath.Base(p.path))
			continue
		}
		if !strings.Contains(string(b), p.mustHold) {
			t.Errorf("%s does not hold %q", filepath.Base(p.path), p.mustHold)
		}
		for _, l := range local {
			if strings.Contains(string(b), l) {
				t.Errorf("%s holds a path of this machine: %s", filepath.Base(p.path), l)
			}
		}
		if filepath.Dir(p.path) == md && filepath.Base(p.path) != "idemlab.md" && !bytes.Contains(index, []byte("("+filepath.Base(p.path)+")")) {
			if !strings.Contains(filepath.Base(p.path), "completion_") { // linked from idemlab_completion.md
				t.Errorf("idemlab.md does not link %s", filepath.Base(p.path))
			}
		}
	}
	for _, tp := range help.Topics {
		page, _ := os.ReadFile(filepath.Join(md, "idemlab_help_"+tp.Name+".md"))
		text, err := topicMarkdown(tp.Name)
		if err != nil || string(page) != text {
			t.Errorf("the Markdown page of %s is not the topic's text (%v)", tp.Name, err)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skipf("groff is not installed (%v): the man pages' roff is not checked", err)
	}
	pages, _ := filepath.Glob(filepath.Join(man, "*.[17]"))
	for _, p := range pages {
		// -Tutf8: the device man uses on a terminal (the default, ps, has
		// no glyph for some symbols the topics use, such as ✗).
		out, err := exec.Command(groff, "-man", "-z", "-ww", "-Tutf8", p).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff -man -z -ww %s: %v\n%s", filepath.Base(p), err, out)
		}
	}
}

// TestRoffEscapes: what would be a request, an escape or a hyphen in
// roff is written so that the page prints it as given.
func TestRoffEscapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{".start of a line", `\&.start of a line`},
		{"'quote", `\&'quote`},
		{"mid. line 'ok", "mid. line 'ok"},
		{`C:\path\n`, `C:\epath\en`},
		{"--out DIR", `\-\-out DIR`},
		{"a\tb", "a        b"},
		{"✓/✗ é", `\[u2713]/\[u2717] \[u00E9]`},
		{"two\n.lines", "two\n\\&.lines"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, roff(tt.in)); diff != "" {
			t.Errorf("roff(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestDocsUsage: docs without a folder is a usage error.
func TestDocsUsage(t *testing.T) {
	for _, args := range [][]string{{"docs"}, {"docs", "extra"}} {
		if r := execIn(t, Hooks{}, args...); r.code != 2 {
			t.Errorf("idemlab %s: exit %d, want 2\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
