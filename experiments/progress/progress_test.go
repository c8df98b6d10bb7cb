package progress

import (
	"bytes"
	"strings"
	"testing"

	"idemlab/experiments/harness"
)

// TestPlainLinesOffATerminal: a log gets the total up front and one line
// per finished condition, never terminal control codes.
func TestPlainLinesOffATerminal(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, false, "experiment")
	p.Start(3)
	for _, c := range []string{"a", "a", "b"} {
		p.Process(harness.ProcessRecord{Scenario: "s", Condition: c})
	}
	p.Done()
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "experiment: 3 worker processes to run" ||
		!strings.HasPrefix(lines[1], "experiment: done s/a (2 processes") || !strings.Contains(lines[1], "2/3 processes") ||
		!strings.HasPrefix(lines[2], "experiment: done s/b (1 processes") || !strings.Contains(lines[2], "3/3 processes") {
		t.Errorf("progress off a terminal:\n%s", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\r") {
		t.Errorf("terminal control codes in a log: %q", out)
	}
}

func TestQuietPrintsNothing(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, true, "experiment")
	p.Start(1)
	p.Process(harness.ProcessRecord{Scenario: "s", Condition: "a"})
	p.Done()
	if b.Len() != 0 {
		t.Errorf("quiet progress printed %q", b.String())
	}
}
