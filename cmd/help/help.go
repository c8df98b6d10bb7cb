// Package help holds idemlab's manual: the help topics that "idemlab help
// TOPIC" prints, as Markdown files embedded beside this code, and the
// rendering of Markdown for a terminal. A topic may hold generated parts,
// written <!-- generated: NAME --> on a line of their own; the command
// fills them from the code (the exit codes, the input reference, the
// results schema), so a fact stated in the code is stated once.
package help

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed topics/*.md generated/*.md
var files embed.FS

// Topic is one help topic: its name, as "idemlab help NAME" takes it, and
// one line about it.
type Topic struct {
	Name  string
	Short string
}

// Topics are the help topics in the order "idemlab help" lists them: a
// newcomer's path first (articles, then their own pattern), the
// reference last.
var Topics = []Topic{
	{"articles", "The three articles: published tables beside reproduced"},
	{"patterns", "Your own pattern file: steps, invariants, known_unsafe"},
	{"handlers", "Test your own handler program: points protocol, receiver"},
	{"faults", "Every fault class and power model, and what each assumes"},
	{"explore", "explore: crash points, seeded crashes and kills, races"},
	{"durability", "durability: power cuts under each journal_mode and level"},
	{"postgres", "--backend postgres: the scenarios on PostgreSQL"},
	{"brokers", "--broker nats: a real NATS JetStream broker in the loop"},
	{"results", "The results folder: files, fields, evidence, report"},
	{"evidence", "What verify re-derives, cross-checks and takes on trust"},
	{"sharding", "--shard i/n and merge: Slurm, Actions, Kubernetes, GitLab"},
	{"ci", "idemlab in CI: --quiet, --summary-json, --junit, baselines"},
	{"exit-codes", "Every command's exit codes"},
	{"input", "The input file's fields, and the flags that override them"},
	{"development", "Inside idemlab: tests, adding a scenario or a fault class"},
}

// Lookup finds a topic by name.
func Lookup(name string) (Topic, bool) {
	for _, t := range Topics {
		if t.Name == name {
			return t, true
		}
	}
	return Topic{}, false
}

var generatedLine = lazyRegexp(`(?m)^<!-- generated: ([a-z0-9-]+) -->$`)

// Markdown is topic name's text with its generated parts filled from gen,
// which maps a part's name to its Markdown. A part gen lacks is an error,
// so no page is printed with a hole in it.
func Markdown(name string, gen map[string]string) (string, error) {
	b, err := files.ReadFile("topics/" + name + ".md")
	if err != nil {
		return "", fmt.Errorf("no help topic %q", name)
	}
	var missing []string
	out := generatedLine().ReplaceAllStringFunc(string(b), func(line string) string {
		part := generatedLine().FindStringSubmatch(line)[1]
		md, ok := gen[part]
		if !ok {
			missing = append(missing, part)
			return line
		}
		return strings.TrimRight(md, "\n")
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("help topic %s: no generator for %s", name, strings.Join(missing, ", "))
	}
	return out, nil
}

// Generated is one of the generated files kept beside the topics (those
// made from the source code, which the binary does not carry), by name.
func Generated(name string) string {
	b, err := files.ReadFile("generated/" + name + ".md")
	if err != nil {
		panic(fmt.Sprintf("help: no generated file %s.md", name))
	}
	return string(b)
}

// CodeBlock is the body of the fenced code block that follows the line
// <!-- block: NAME --> in topic's Markdown: a recipe the tests run as the
// topic prints it.
func CodeBlock(topic, name string) (string, error) {
	b, err := files.ReadFile("topics/" + topic + ".md")
	if err != nil {
		return "", fmt.Errorf("no help topic %q", topic)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- block: "+name+" -->\n")
	if !ok {
		return "", fmt.Errorf("help topic %s has no block %s", topic, name)
	}
	open, body, ok := strings.Cut(rest, "\n")
	if !strings.HasPrefix(open, "```") || !ok {
		return "", fmt.Errorf("help topic %s: block %s is not followed by a fenced code block", topic, name)
	}
	body, _, ok = strings.Cut(body, "\n```")
	if !ok {
		return "", fmt.Errorf("help topic %s: block %s is not closed", topic, name)
	}
	return body, nil
}
