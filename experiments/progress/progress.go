// Package progress tells a person waiting for a run how far it is. On a
// terminal it redraws one line with the processes done out of the known
// total and an ETA; elsewhere, such as a CI log, it prints one plain line
// per finished scenario and one every few seconds between, so a log is
// never silent for minutes. Scenarios run one after another, but a
// scenario's conditions may interleave (the batch's first runs go side by
// side), so a condition's end is not something a line can claim.
package progress

import (
	"fmt"
	"idemlab/experiments/results"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress receives the run's events. The zero value prints nothing.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	what     string
	total    int
	done     int
	start    time.Time
	scen     string
	cond     string
	scenN    int
	scenAt   time.Time
	lastDraw time.Time
	lastLine time.Time
	drawn    bool
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
	return &Progress{w: w, tty: IsTerminal(w), what: what}
}

// Start tells the total number of processes the run will start.
func (p *Progress) Start(total int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.start = total, time.Now()
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %d worker processes to run\n", p.what, total)
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
		p.start = time.Now()
	}
	p.cond = rec.Scenario + "/" + rec.Condition
	p.done++
	p.scenN++
	switch {
	case p.tty && (time.Since(p.lastDraw) > 100*time.Millisecond || p.done == p.total):
		p.draw()
	case !p.tty && time.Since(p.lastLine) >= Every:
		fmt.Fprintf(p.w, "%s: %s · now %s\n", p.what, p.counts(), p.cond)
		p.lastLine = time.Now()
	}
}

// Scenario is called as a scenario starts; the one before it has ended. Some scenarios record their
// processes only when they finish (a pool's members live to the end), so
// the boundary comes from here, not from the records.
func (p *Progress) Scenario(name string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishScenario()
	p.scen, p.scenN, p.scenAt, p.lastLine = name, 0, time.Now(), time.Now()
	p.cond = name
}

func (p *Progress) finishScenario() {
	if p.scen == "" || p.tty {
		return
	}
	fmt.Fprintf(p.w, "%s: done %s (%d processes, %.1fs) · %s\n", p.what, p.scen, p.scenN, time.Since(p.scenAt).Seconds(), p.counts())
}

func (p *Progress) counts() string {
	s := fmt.Sprintf("%d", p.done)
	if p.total > 0 {
		s += fmt.Sprintf("/%d", p.total)
	}
	s += " processes"
	elapsed := time.Since(p.start)
	if p.total > 0 && p.done > 0 && p.done < p.total {
		eta := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
		s += fmt.Sprintf(", %s elapsed, about %s left", elapsed.Round(time.Second), eta.Round(time.Second))
	} else {
		s += fmt.Sprintf(", %s elapsed", elapsed.Round(time.Second))
	}
	return s
}

func (p *Progress) draw() {
	line := fmt.Sprintf("%s %s · %s", p.what, p.counts(), p.cond)
	if len(line) > 99 {
		line = line[:96] + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s", line)
	p.lastDraw, p.drawn = time.Now(), true
}

// Done ends the progress: the terminal line is cleared, so tables start on
// a clean line, and a log gets its last scenario.
func (p *Progress) Done() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		if p.drawn {
			fmt.Fprint(p.w, "\r\x1b[2K")
		}
		return
	}
	p.finishScenario()
	p.scen = ""
}
