package help

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTerminal(t *testing.T) {
	tests := []struct {
		name, md string
		width    int
		want     string
	}{
		{"title and wrapped paragraph", "# t: a topic\n\nOne `two` **three** four\nfive six.\n", 14,
			"T: a topic\n\nOne two three\nfour five six.\n"},
		{"code kept as it is, indented", "text\n\n```sh\ngo run . experiment --out results-local   # long\n```\n", 20,
			"text\n\n  go run . experiment --out results-local   # long\n"},
		{"a table that fits is drawn in columns", "| a | bb |\n|---|---|\n| `x` | y \\| z |\n", 40,
			"  a  bb\n  -  -----\n  x  y | z\n"},
		{"a table that does not fit: a block per row", "| key | meaning |\n|---|---|\n| `a much longer key` | one two three four |\n| k2 | five |\n", 16,
			"  a much longer\n    key\n    one two\n      three four\n\n  k2\n    five\n"},
		{"a narrow key hangs", "| code | meaning |\n|---|---|\n| 0 | one two three four |\n| 130 | five |\n", 16,
			"  0     one two\n        three\n        four\n  130   five\n"},
		{"three columns name their headers", "| c | a | b |\n|---|---|---|\n| 1 | long text here | x |\n", 12,
			"  1\n    a: long\n      text\n      here\n    b: x\n"},
		{"list items hang", "- **one** two three\n  four\n- five\n", 14,
			"  - one two\n    three four\n  - five\n"},
		{"numbered items", "1. first\n2. second\n", 40, "  1. first\n  2. second\n"},
		{"a link within the page keeps its text", "see [the table](#x) and [Go](https://go.dev)\n", 80,
			"see the table and Go (https://go.dev)\n"},
		{"generated markers do not print", "a\n\n<!-- block: slurm -->\n```sh\nx\n```\n", 80, "a\n\n  x\n"},
		{"bold around code", "**Without `--dsn`** it starts\n", 80, "Without --dsn it starts\n"},
		{"emphasis, but not a glob", "*re-derives* `shard-*` and shard-*\n", 80, "re-derives shard-* and shard-*\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Terminal(tt.md, tt.width)); diff != "" {
				t.Errorf("Terminal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryTopicHasItsFile: every listed topic has its Markdown, and every
// Markdown file is a listed topic.
func TestEveryTopicHasItsFile(t *testing.T) {
	entries, err := files.ReadDir("topics")
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, e := range entries {
		got = append(got, strings.TrimSuffix(e.Name(), ".md"))
	}
	for _, tp := range Topics {
		want = append(want, tp.Name)
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("topics listed (-) against files (+):\n%s", diff)
	}
}
