package progress

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
)

// clocked returns a Progress writing plain lines to b, on a clock the test
// moves with the returned function.
func clocked(b *bytes.Buffer) (*Progress, func(time.Duration)) {
	p := New(b, false, "experiment")
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return t }
	return p, func(d time.Duration) { t = t.Add(d) }
}

// runParts feeds p the scenarios in order, each with n processes of
// condition "c", one second apart.
func runParts(p *Progress, tick func(time.Duration), scenarios []string, n []int) {
	for i, s := range scenarios {
		p.Scenario(s)
		for range n[i] {
			tick(time.Second)
			p.Process(results.ProcessRecord{Scenario: s, Condition: "c"})
		}
	}
}

func lines(b *bytes.Buffer) []string {
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// TestPlainLinesOffATerminal: a log gets the total up front and one line
// per finished scenario, however its conditions interleave, and never
// terminal control codes.
func TestPlainLinesOffATerminal(t *testing.T) {
	var b bytes.Buffer
	p, tick := clocked(&b)
	p.Start([]Part{{"s", 3, 0}, {"t", 1, 0}})
	p.Scenario("s")
	for _, c := range []string{"a", "b", "a"} {
		tick(time.Second)
		p.Process(results.ProcessRecord{Scenario: "s", Condition: c})
	}
	runParts(p, tick, []string{"t"}, []int{1})
	p.Done(nil)
	got := lines(&b)
	want := []string{
		"experiment: 4 worker processes to run",
		"experiment: done s (3 processes, 3.0s) · 3/4 processes, 3s elapsed",
		"experiment: done t (1 processes, 1.0s) · 4/4 processes, 4s elapsed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress off a terminal (-want +got):\n%s", diff)
	}
	if strings.Contains(b.String(), "\x1b") || strings.Contains(b.String(), "\r") {
		t.Errorf("terminal control codes in a log: %q", b.String())
	}
}

func TestQuietPrintsNothing(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, true, "experiment")
	p.Start([]Part{{"s", 1, 0}})
	p.Scenario("s")
	p.Process(results.ProcessRecord{Scenario: "s", Condition: "a"})
	p.Done(nil)
	if b.Len() != 0 {
		t.Errorf("quiet progress printed %q", b.String())
	}
}

// TestCountsAddUp: a plan that bounds its count has its total shrink to
// what it started when it ends, and one that counted too few never shows
// more done than in all.
func TestCountsAddUp(t *testing.T) {
	var b bytes.Buffer
	p, tick := clocked(&b)
	p.Start([]Part{{"bounded", 5, 0}, {"short", 1, 0}})
	runParts(p, tick, []string{"bounded", "short"}, []int{3, 2})
	p.Done(nil)
	got := lines(&b)
	want := []string{
		"experiment: 6 worker processes to run",
		"experiment: done bounded (3 processes, 3.0s) · 3/4 processes, 3s elapsed",
		"experiment: done short (2 processes, 2.0s) · 5/5 processes, 5s elapsed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStopSaysWhere: a run stopped by a signal, or ended by a harness
// fault, names the scenario and how far it got, and does not call it done.
func TestStopSaysWhere(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: stopped by a signal", errclass.ErrInterrupted), "experiment: stopped in batch after 2 of its 4 processes · 3/6 processes, 3s elapsed"},
		{fmt.Errorf("%w: write the folder", errclass.ErrHarness), "experiment: ended early in batch after 2 of its 4 processes · 3/6 processes, 3s elapsed"},
		{fmt.Errorf("%w: 1 condition failed", errclass.ErrExpectation), "experiment: done batch (2 processes, 2.0s) · 3/4 processes, 3s elapsed"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		p, tick := clocked(&b)
		p.Start([]Part{{"redelivery", 1, 0}, {"batch", 4, 0}, {"claim", 1, 0}})
		runParts(p, tick, []string{"redelivery", "batch"}, []int{1, 2})
		b.Reset()
		p.Done(tt.err)
		if got := strings.TrimSuffix(b.String(), "\n"); got != tt.want {
			t.Errorf("Done(%v):\n got %q\nwant %q", tt.err, got, tt.want)
		}
	}
}

// TestLeft prices what is left of a run from the scenarios' own costs.
func TestLeft(t *testing.T) {
	fast, slow := 10*time.Millisecond, time.Second
	s := time.Second
	tests := []struct {
		name  string
		parts []Tally
		cur   int
		want  time.Duration
	}{
		{"current at its own mean", []Tally{{"fast", 20, 10, 5 * s, fast}}, 0, 5 * s},
		{"later at their cost", []Tally{{"fast", 20, 20, 1 * s, fast}, {"slow", 8, 0, 0, slow}}, 0, 8 * s},
		// The case: the batch nearly done, the claim's long-lived
		// pool still to come, which a run-wide mean prices as cheap as a
		// batch process.
		{"a dear scenario after a cheap one", []Tally{{"fast", 170, 160, 16 * s, fast}, {"slow", 8, 0, 0, slow}}, 0, 1*s + 8*s},
		{"current with nothing finished yet", []Tally{{"slow", 8, 0, 3 * s, slow}}, 0, 5 * s},
		{"overdue is zero, not negative", []Tally{{"slow", 2, 0, 9 * s, slow}}, 0, 0},
		{"finished twice as slow as priced", []Tally{{"fast", 100, 100, 2 * s, fast}, {"fast", 10, 5, s, fast}, {"slow", 1, 0, 0, slow}}, 1, 1*s + 2*s},
		{"no declared cost at the default", []Tally{{"fast", 1, 1, 10 * time.Millisecond, fast}, {"other", 10, 0, 0, 0}}, 0, 10 * DefaultCost},
		{"nothing running", []Tally{{"fast", 1, 1, s, fast}}, -1, 0},
	}
	for _, tt := range tests {
		if got := Left(tt.parts, tt.cur); got != tt.want {
			t.Errorf("%s: Left = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPace(t *testing.T) {
	cost := 100 * time.Millisecond
	tests := []struct {
		name     string
		finished []Tally
		want     float64
	}{
		{"none", nil, 1},
		{"as priced", []Tally{{"a", 10, 10, time.Second, cost}}, 1},
		{"slower", []Tally{{"a", 10, 10, 3 * time.Second, cost}}, 3},
		{"kept within 8", []Tally{{"a", 1, 1, time.Minute, cost}}, 8},
		{"no process finished", []Tally{{"a", 0, 0, time.Second, cost}}, 1},
	}
	for _, tt := range tests {
		if got := Pace(tt.finished); got != tt.want {
			t.Errorf("%s: Pace = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestTerminalLineFits: the redrawn line is cut to the terminal's width by
// runes, never inside a character, and is cleared at the end.
func TestTerminalLineFits(t *testing.T) {
	var b bytes.Buffer
	p, tick := clocked(&b)
	p.tty, p.width = true, 40
	p.Start([]Part{{"explore", 2, 0}})
	p.Scenario("explore")
	tick(time.Second)
	p.Process(results.ProcessRecord{Scenario: "explore", Condition: "single-transaction/timing-race-2-kill → ✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓✓"})
	p.Done(nil)
	for _, l := range strings.Split(b.String(), "\r\x1b[2K") {
		if n := len([]rune(l)); n > 40 || !utf8.ValidString(l) {
			t.Errorf("terminal line of %d runes (max 40) or not UTF-8: %q", n, l)
		}
	}
	if !strings.HasSuffix(b.String(), "\r\x1b[2K") || !strings.Contains(b.String(), "1/2 processes") {
		t.Errorf("terminal output %q: want the count drawn, then the line cleared", b.String())
	}
}
