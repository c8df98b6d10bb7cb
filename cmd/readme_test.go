package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"idemlab/cmd/help"
	"idemlab/experiments/all"
	"idemlab/experiments/backend"
	"idemlab/experiments/suite"
)

const readmePath = "../README.md"

// readmeBlocks are the README's parts made from the code, between
// <!-- NAME: made by ... --> and <!-- /NAME -->.
func readmeBlocks() map[string]string {
	var topics strings.Builder
	for _, t := range help.Topics {
		fmt.Fprintf(&topics, "- `%s`: %s\n", t.Name, t.Short)
	}
	ci, err := help.CodeBlock("ci", "ci")
	if err != nil {
		ci = err.Error()
	}
	return map[string]string{
		"exit-codes": exitCodesCompact(),
		"topics":     topics.String(),
		"ci":         "```sh\n" + ci + "\n```\n",
	}
}

// TestReadmeGenerated: the README's exit codes and topic list are what
// the code gives; -update rewrites them. The README stays within 250
// lines, in issue 32's outline (readmeOutline).
func TestReadmeGenerated(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md is %d lines; keep it within 250 and move the rest into a help topic", n)
	}
	for _, f := range readmeOutline(readme) {
		t.Error(f)
	}
	for name, want := range readmeBlocks() {
		start := regexp.MustCompile(`(?m)^<!-- ` + name + `: [^>]*-->\n`)
		loc := start.FindStringIndex(readme)
		end := strings.Index(readme, "<!-- /"+name+" -->")
		if loc == nil || end < loc[1] {
			t.Errorf("README.md has no block %s", name)
			continue
		}
		if got := readme[loc[1]:end]; got != want {
			if *update {
				readme = readme[:loc[1]] + want + readme[end:]
				continue
			}
			t.Errorf("README.md's %s are stale; run go test ./cmd -run TestReadme -update (-README +code):\n%s", name, cmp.Diff(got, want))
		}
	}
	if *update && readme != string(b) {
		if err := os.WriteFile(readmePath, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readmeOutline checks the README's sections against issue 32's order:
// the set-up commands within its first 40 lines, then the scenarios, a
// newcomer's own pattern with its command within the first 120 lines,
// the files, the exit codes, CI, and where the rest is.
func readmeOutline(readme string) []string {
	want := []struct{ heading, within string }{
		{"## Two commands", "```sh"},
		{"## The six scenarios", ""},
		{"## Test your own pattern", "--scenario pattern --pattern-file"},
		{"## The files a run writes", ""},
		{"## Exit codes", ""},
		{"## In CI", ""},
		{"## Where the rest is", "idemlab docs"},
	}
	limit := map[string]int{"## Two commands": 40, "## Test your own pattern": 120}
	lines := strings.Split(readme, "\n")
	var found []string
	at := 0
	for _, w := range want {
		i := slices.IndexFunc(lines[at:], func(l string) bool { return strings.HasPrefix(l, w.heading) })
		if i < 0 {
			found = append(found, fmt.Sprintf("README.md has no %q after line %d (issue 32's outline)", w.heading, at))
			continue
		}
		at += i
		if w.within == "" {
			continue
		}
		j := slices.IndexFunc(lines[at:], func(l string) bool { return strings.Contains(l, w.within) })
		if j < 0 {
			found = append(found, fmt.Sprintf("README.md's %q section has no %q", w.heading, w.within))
		} else if n, ok := limit[w.heading]; ok && at+j+1 > n {
			found = append(found, fmt.Sprintf("README.md's %q comes at line %d; issue 32 wants it within the first %d", w.within, at+j+1, n))
		}
	}
	return found
}

// TestReadmeCommands is the README's drift test: every idemlab command
// line in its code blocks parses, with each flag known to its command;
// every "idemlab help TOPIC" names a topic; every --flag its prose names
// is some command's; every repository file it names exists (or is made
// by the README itself, cat > FILE), and every make target is the
// Makefile's.
func TestReadmeCommands(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range readmeDrift(t, string(b), true) {
		t.Error(f)
	}
}

// readmeDrift lists what the README names that the code does not have.
func readmeDrift(t *testing.T, readme string, needCommands bool) []string {
	t.Helper()
	var found []string
	root := newRootCmd(Streams{}, withPatterns(Hooks{}))
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	code, prose := splitCode(readme)
	made := madeFiles(code)
	commands := 0
	// A line that ends in a backslash goes on on the next.
	code = regexp.MustCompile(`\\\n\s*`).ReplaceAllString(code, " ")
	for _, line := range strings.Split(code, "\n") {
		for _, part := range regexp.MustCompile(`&&|\|\||;|\|`).Split(line, -1) {
			args := strings.Fields(strings.SplitN(part, "#", 2)[0])
			switch {
			case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == ".":
				args = args[3:]
			case len(args) > 0 && (args[0] == "./idemlab" || args[0] == "idemlab"):
				args = args[1:]
			case len(args) >= 2 && args[0] == "make":
				for _, target := range args[1:] {
					if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
						found = append(found, fmt.Sprintf("make %s: no such target in the Makefile", target))
					}
				}
				continue
			default:
				continue
			}
			commands++
			if msg := checkCommandLine(newRootCmd(Streams{}, withPatterns(Hooks{})), args, made); msg != "" {
				found = append(found, fmt.Sprintf("%q: %s", strings.TrimSpace(part), msg))
			}
		}
	}
	if commands == 0 && needCommands {
		found = append(found, "no idemlab command found in the README's code blocks")
	}
	for _, m := range regexp.MustCompile("idemlab help ([a-z-]+)").FindAllStringSubmatch(readme, -1) {
		if _, ok := help.Lookup(m[1]); !ok {
			found = append(found, fmt.Sprintf("idemlab help %s: no such topic", m[1]))
		}
	}
	flags := map[string]bool{"help": true} // cobra adds --help to every command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// Inline code that is an idemlab command line parses as one; inline
	// code that starts with a flag names an idemlab flag.
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose, -1) {
		span := m[1]
		args := strings.Fields(span)
		switch {
		case strings.HasPrefix(span, "idemlab ") || strings.HasPrefix(span, "./idemlab ") || strings.HasPrefix(span, "go run . "):
			args = args[1:]
			if args[0] == "run" {
				args = args[2:]
			}
			if msg := checkCommandLine(newRootCmd(Streams{}, withPatterns(Hooks{})), args, made); msg != "" && !strings.Contains(span, "…") {
				found = append(found, fmt.Sprintf("%q: %s", span, msg))
			}
		case strings.HasPrefix(span, "--"):
			name := strings.TrimPrefix(regexp.MustCompile(`^--[a-z][a-z-]*`).FindString(span), "--")
			if name != "" && !flags[name] {
				found = append(found, fmt.Sprintf("--%s: no command has this flag", name))
			}
		}
	}
	for _, m := range regexp.MustCompile("`((?:testdata|experiments|worker|cmd|\\.ci)/[^` ]*)`").FindAllStringSubmatch(readme, -1) {
		p := strings.TrimSuffix(m[1], "/")
		// A Go name after a package's path (worker/sqlitedb.Open) names
		// the package; a placeholder in capitals (experiments/NAME)
		// names none.
		if i := strings.LastIndex(p, "."); i > strings.LastIndex(p, "/") && i+1 < len(p) && p[i+1] >= 'A' && p[i+1] <= 'Z' {
			p = p[:i]
		}
		if _, ok := made[p]; ok || strings.Contains(p, "*") || regexp.MustCompile(`/[A-Z]+([./]|$)`).MatchString(p) {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", p)); err != nil && !generatedFile(p) {
			found = append(found, fmt.Sprintf("%s: no such file in the repository", p))
		}
	}
	return found
}

// generatedFile is a file a run writes, which the README names but the
// repository does not hold.
func generatedFile(p string) bool {
	switch p {
	case "results.json", "observations.jsonl", "raw-processes.jsonl", "summary.json":
		return true
	}
	return false
}

// checkCommandLine parses one idemlab command line as the command would,
// without running it: the command must exist, each flag must be its own,
// "help TOPIC" must name a topic, a pattern file must exist.
func checkCommandLine(root *cobra.Command, args []string, made map[string]string) string {
	placeholder := regexp.MustCompile(`^[A-Z]+$`)
	if len(args) > 0 && (args[0] == "worker" || placeholder.MatchString(args[0])) {
		return "" // a worker, which main dispatches; a placeholder
	}
	if len(args) > 0 && args[0] == "help" {
		if len(args) > 1 && !placeholder.MatchString(args[1]) {
			if _, ok := help.Lookup(args[1]); !ok {
				if c, _, err := root.Find(args[1:]); err != nil || c == root {
					return "no such topic or command"
				}
			}
		}
		return ""
	}
	c, rest, err := root.Find(args)
	if err != nil {
		return err.Error()
	}
	if c == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return "no such command"
	}
	fs := c.Flags()
	if err := fs.Parse(rest); err != nil && !errors.Is(err, pflag.ErrHelp) {
		return err.Error()
	}
	for _, name := range []string{"pattern-file", "claim-sql", "input"} {
		if f := fs.Lookup(name); f != nil && f.Changed {
			v := f.Value.String()
			if _, ok := made[v]; !ok {
				if _, err := os.Stat(filepath.Join("..", v)); err != nil {
					return fmt.Sprintf("--%s %s: no such file", name, v)
				}
			}
		}
	}
	if c.Name() == "experiment" {
		return planExperiment(fs, made)
	}
	return ""
}

// madeFiles are the files a text makes itself with a here-document,
// cat > FILE <<'EOF' … EOF, by name, with their text ("" where the text
// is not given, as in cat > FILE).
func madeFiles(code string) map[string]string {
	made := map[string]string{}
	for _, m := range regexp.MustCompile(`cat > (\S+)`).FindAllStringSubmatch(code, -1) {
		made[m[1]] = ""
	}
	for _, m := range regexp.MustCompile(`(?s)cat > (\S+) <<'?EOF'?\n(.*?\n)EOF\n`).FindAllStringSubmatch(code, -1) {
		made[m[1]] = m[2]
	}
	return made
}

// planExperiment plans an experiment command line as the run would
// before it starts anything: the chosen scenarios, the input file, each
// scenario flag applied to a scenario that takes it, its value valid, and
// the files the plans read (a pattern file, a claim statement). A line
// with a placeholder or a shell variable in it is not planned.
func planExperiment(fs *pflag.FlagSet, made map[string]string) string {
	var overrides map[string]string
	unplannable := false
	fs.Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if regexp.MustCompile(`[$*{}'"]|(^|[/=,])[A-Z][A-Z_]+([/.,]|$)`).MatchString(v) {
			unplannable = true
		}
		if o, ok := f.Value.(*overrideFlag); ok {
			overrides = o.into
		}
	})
	if dsn := fs.Lookup(backend.FlagDSN); unplannable || dsn != nil && dsn.Changed {
		return "" // --dsn names a server of the reader's
	}
	reg := all.Scenarios(sourcePatterns)
	names, _ := fs.GetStringArray("scenario")
	chosen, err := suite.Choose(reg, names)
	if err != nil {
		return err.Error()
	}
	input := fs.Lookup("input").Value.String()
	in, err := suite.ReadInput(filepath.Join("..", input), reg)
	if err != nil {
		return err.Error()
	}
	if _, err := suite.PlanAll(context.Background(), chosen, in, overrides, repoFiles(made), suite.ProbeMachine()); err != nil {
		return err.Error()
	}
	return ""
}

// repoFiles reads the files a plan names from the repository's root, or,
// for a file the text makes itself, its text.
type repoFiles map[string]string

func (r repoFiles) ReadFile(name string) ([]byte, error) {
	if text, ok := r[name]; ok && text != "" {
		return []byte(text), nil
	}
	return os.ReadFile(filepath.Join("..", name))
}

// splitCode parts Markdown into its fenced code and the rest.
func splitCode(md string) (code, prose string) {
	var c, p strings.Builder
	in := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if in {
			c.WriteString(l + "\n")
		} else {
			p.WriteString(l + "\n")
		}
	}
	return c.String(), p.String()
}

// TestTopicCommands runs the README's drift test over every help topic:
// the commands, flags, topics and files a topic names exist.
func TestTopicCommands(t *testing.T) {
	for _, tp := range help.Topics {
		t.Run(tp.Name, func(t *testing.T) {
			md, err := topicMarkdown(tp.Name)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range readmeDrift(t, md, false) {
				t.Error(f)
			}
		})
	}
}
