package cmd

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"idemlab/cmd/help"
)

// TestHelpTopics: "idemlab help" lists every topic on one line, in
// help.Topics' order, within 80 columns as all its lines, and
// "idemlab help TOPIC" prints each, at 80 columns: no line of prose
// wider, no Markdown marks left (code blocks, indented, are kept as they
// are).
func TestHelpTopics(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	list := execIn(t, Hooks{}, "help")
	if list.code != 0 {
		t.Fatalf("idemlab help: exit %d\n%s", list.code, list.stderr)
	}
	listed := 0
	for i, l := range strings.Split(list.stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("idemlab help line %d is %d columns: %q", i+1, n, l)
		}
		if f := strings.Fields(l); len(f) > 2 && f[0] == "idemlab" && listed < len(help.Topics) && f[1] == help.Topics[listed].Name {
			listed++
		}
	}
	if listed != len(help.Topics) {
		t.Errorf("idemlab help lists the topics out of help.Topics' order (%d in order):\n%s", listed, list.stdout)
	}
	for _, tp := range help.Topics {
		t.Run(tp.Name, func(t *testing.T) {
			line := "idemlab " + tp.Name
			found := false
			for _, l := range strings.Split(list.stdout, "\n") {
				if f := strings.Fields(l); len(f) > 2 && f[0]+" "+f[1] == line && strings.Contains(l, tp.Short) {
					found = true
					if n := utf8.RuneCountInString(l); n > 80 {
						t.Errorf("idemlab help lists %s in %d columns: %q", tp.Name, n, l)
					}
				}
			}
			if !found {
				t.Errorf("idemlab help does not list %s with its line %q:\n%s", tp.Name, tp.Short, list.stdout)
			}
			r := execIn(t, Hooks{}, "help", tp.Name)
			if r.code != 0 || r.stderr != "" || r.stdout == "" {
				t.Fatalf("idemlab help %s: exit %d, stderr %q, %d bytes", tp.Name, r.code, r.stderr, len(r.stdout))
			}
			inCode := false
			for i, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "  - ") {
					inCode = true
				} else if l != "" {
					inCode = false
				}
				if inCode {
					continue
				}
				if n := utf8.RuneCountInString(l); n > 80 && strings.Contains(strings.TrimSpace(l), " ") {
					t.Errorf("help %s line %d is %d columns: %q", tp.Name, i+1, n, l)
				}
				for _, mark := range []string{"**", "```", "|---", "](#"} {
					if strings.Contains(l, mark) {
						t.Errorf("help %s line %d keeps the Markdown %q: %q", tp.Name, i+1, mark, l)
					}
				}
			}
		})
	}
}

// TestHelpUnknownTopic: "idemlab help NAME" for a name that is neither a
// command nor a topic exits 2 with one line on stderr that names it and
// lists every topic; a command and a topic still print their help.
func TestHelpUnknownTopic(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantOut  bool
	}{
		{[]string{"help", "no-such-topic"}, 2, false},
		{[]string{"help", "no", "such"}, 2, false},
		{[]string{"help", "verify"}, 0, true},
		{[]string{"help", "patterns"}, 0, true},
		{[]string{"help"}, 0, true},
	}
	for _, tt := range tests {
		r := execIn(t, Hooks{}, tt.args...)
		if r.code != tt.wantCode || (r.stdout != "") != tt.wantOut {
			t.Errorf("idemlab %s: exit %d (want %d), stdout %d bytes\nstderr: %s", strings.Join(tt.args, " "), r.code, tt.wantCode, len(r.stdout), r.stderr)
			continue
		}
		if tt.wantCode == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], strconv.Quote(strings.Join(tt.args[1:], " "))) {
			t.Errorf("idemlab %s: want one line naming the topic, got:\n%s", strings.Join(tt.args, " "), r.stderr)
		}
		for _, tp := range help.Topics {
			if !strings.Contains(r.stderr, tp.Name) {
				t.Errorf("idemlab %s: the line does not list the topic %s: %s", strings.Join(tt.args, " "), tp.Name, r.stderr)
			}
		}
	}
}
