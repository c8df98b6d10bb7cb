// Package progress tells a person waiting for a run how far it is. On a
// terminal it redraws one line with the processes done out of the plan's
// total and an ETA; elsewhere, such as a CI log, it prints one plain line
// per finished scenario and one every few seconds between, so a log is
// never silent for minutes. Scenarios run one after another, but a
// scenario's conditions may interleave (the batch's first runs go side by
// side), so a condition's end is not something a line can claim.
//
// The counts come from the plans. Where a plan can only bound its count (a
// kill that lands before or after a commit decides whether a resolve
// runs), the total shrinks to what was started when the scenario ends, so
// the count never passes the total and ends equal to it.
package progress

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
)

// Part is one scenario of the run as its plan counts it.
type Part struct {
	Name string
	// Processes is the plan's count: exact, or the most the scenario may
	// start.
	Processes int
	// Cost is what one of its processes takes (scenario.Caps.Cost).
	Cost time.Duration
}

// Tally is one scenario's progress: its planned and finished processes
// and the time spent in it, to its end or so far.
type Tally struct {
	Name    string
	Planned int
	Done    int
	Took    time.Duration
	// Cost is what one of its processes takes, as the scenario declares
	// it; zero prices it at DefaultCost.
	Cost time.Duration
}

// Progress receives the run's events. The zero value prints nothing.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	width    int
	what     string
	parts    []Tally
	cur      int
	start    time.Time
	partAt   time.Time
	cond     string
	lastDraw time.Time
	lastLine time.Time
	drawn    bool
	// now is the clock; tests set it.
	now func() time.Time
}

// Every is how often a log gets a line while a scenario runs.
const Every = 5 * time.Second

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns a Progress writing to w; quiet makes it print nothing.
func New(w io.Writer, quiet bool, what string) *Progress {
	if quiet {
		return &Progress{}
	}
	p := &Progress{w: w, tty: IsTerminal(w), width: 100, what: what, cur: -1, now: time.Now}
	if f, ok := w.(*os.File); ok && p.tty {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			p.width = cols
		}
	}
	return p
}

// Start tells the scenarios the run will go through, in order, with the
// processes each plan counts.
func (p *Progress) Start(parts []Part) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = p.now()
	p.parts = p.parts[:0]
	for _, pt := range parts {
		p.parts = append(p.parts, Tally{Name: pt.Name, Planned: pt.Processes, Cost: pt.Cost})
	}
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %d worker processes to run\n", p.what, p.total())
	}
}

// Process is called after each child process is recorded.
func (p *Progress) Process(rec results.ProcessRecord) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		p.start = p.now()
	}
	t := p.part(rec.Scenario)
	t.Done++
	// A plan that counted too few must not show more done than in all.
	t.Planned = max(t.Planned, t.Done)
	p.cond = rec.Scenario + "/" + rec.Condition
	now := p.now()
	switch {
	case p.tty && (now.Sub(p.lastDraw) > 100*time.Millisecond || p.done() == p.total()):
		p.draw()
	case !p.tty && now.Sub(p.lastLine) >= Every:
		fmt.Fprintf(p.w, "%s: %s · now %s\n", p.what, p.counts(true), p.cond)
		p.lastLine = now
	}
}

// part is the tally of the named scenario; a name the plan did not list
// gets a tally of its own.
func (p *Progress) part(name string) *Tally {
	for i := range p.parts {
		if p.parts[i].Name == name {
			return &p.parts[i]
		}
	}
	p.parts = append(p.parts, Tally{Name: name})
	return &p.parts[len(p.parts)-1]
}

// Scenario is called as a scenario starts; the one before it has ended.
// Some scenarios record their processes only when they finish (a pool's
// members live to the end), so the boundary comes from here, not from the
// records.
func (p *Progress) Scenario(name string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishScenario()
	p.part(name)
	for i := range p.parts {
		if p.parts[i].Name == name {
			p.cur = i
		}
	}
	now := p.now()
	p.partAt, p.lastLine, p.cond = now, now, name
}

// finishScenario closes the running scenario: its time is final and its
// count is what it started, and a log gets its line.
func (p *Progress) finishScenario() {
	if p.cur < 0 {
		return
	}
	t := &p.parts[p.cur]
	t.Took, t.Planned = p.now().Sub(p.partAt), t.Done
	p.cur = -1
	if !p.tty {
		fmt.Fprintf(p.w, "%s: done %s (%d processes, %.1fs) · %s\n", p.what, t.Name, t.Done, t.Took.Seconds(), p.counts(false))
	}
}

func (p *Progress) total() int {
	n := 0
	for _, t := range p.parts {
		n += t.Planned
	}
	return n
}

func (p *Progress) done() int {
	n := 0
	for _, t := range p.parts {
		n += t.Done
	}
	return n
}

// counts is "57/188 processes, 50s elapsed", with the time left while the
// run goes on.
func (p *Progress) counts(running bool) string {
	s := fmt.Sprintf("%d/%d processes", p.done(), p.total())
	elapsed := p.now().Sub(p.start)
	s += fmt.Sprintf(", %s elapsed", elapsed.Round(time.Second))
	if running && p.cur >= 0 {
		parts := append([]Tally{}, p.parts...)
		parts[p.cur].Took = p.now().Sub(p.partAt)
		s += fmt.Sprintf(", about %s left", Left(parts, p.cur).Round(time.Second))
	}
	return s
}

func (p *Progress) draw() {
	line := fmt.Sprintf("%s %s · %s", p.what, p.counts(true), p.cond)
	if utf8.RuneCountInString(line) > p.width-1 {
		line = string([]rune(line)[:p.width-4]) + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s", line)
	p.lastDraw, p.drawn = p.now(), true
}

// Done ends the progress with the run's error: the terminal line is
// cleared, so tables start on a clean line, and a log gets its last
// scenario. A run stopped by a signal or a harness fault says where it
// stopped, rather than that the scenario was done.
func (p *Progress) Done(err error) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[2K")
	}
	if p.start.IsZero() || errors.Is(err, errclass.ErrUsage) {
		// Nothing started, or what the run was given is at fault (a
		// statement only the server could check): the error says it all.
		return
	}
	if err == nil || errors.Is(err, errclass.ErrExpectation) {
		if p.tty {
			p.cur = -1
			return
		}
		p.finishScenario()
		return
	}
	verb := "ended early"
	if errors.Is(err, errclass.ErrInterrupted) {
		verb = "stopped"
	}
	if p.cur < 0 {
		fmt.Fprintf(p.w, "%s: %s before a scenario began · %s\n", p.what, verb, p.counts(false))
		return
	}
	t := p.parts[p.cur]
	fmt.Fprintf(p.w, "%s: %s in %s after %d of its %d processes · %s\n", p.what, verb, t.Name, t.Done, t.Planned, p.counts(false))
	p.cur = -1
}
