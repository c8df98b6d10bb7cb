package progress

import (
	"bytes"
	"idemlab/experiments/results"
	"strings"
	"testing"
)

// TestPlainLinesOffATerminal: a log gets the total up front and one line
// per finished scenario, however its conditions interleave, and never
// terminal control codes.
func TestPlainLinesOffATerminal(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, false, "experiment")
	p.Start(4)
	p.Scenario("s")
	for _, c := range []string{"a", "b", "a"} {
		p.Process(results.ProcessRecord{Scenario: "s", Condition: c})
	}
	p.Scenario("t")
	p.Process(results.ProcessRecord{Scenario: "t", Condition: "c"})
	p.Done()
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "experiment: 4 worker processes to run" ||
		!strings.HasPrefix(lines[1], "experiment: done s (3 processes") || !strings.Contains(lines[1], "3/4 processes") ||
		!strings.HasPrefix(lines[2], "experiment: done t (1 processes") || !strings.Contains(lines[2], "4/4 processes") {
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
	p.Scenario("s")
	p.Process(results.ProcessRecord{Scenario: "s", Condition: "a"})
	p.Done()
	if b.Len() != 0 {
		t.Errorf("quiet progress printed %q", b.String())
	}
}
