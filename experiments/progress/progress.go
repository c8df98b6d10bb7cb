// Package progress reports, on stderr, each worker process a long run
// spawns. On a terminal it redraws one status line (count, and with a known
// total the percentage and an ETA); elsewhere it prints one plain line per
// process, so a CI log shows where a slow run spends its time. It is a few
// dozen lines of its own rather than a progress-bar library because every
// worker process pays the package init of everything the binary links.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"idemlab/experiments/harness"
)

// IsTerminal says whether w is a terminal, where a status line can be
// redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Enabled says whether the redrawn status line should be used on w: never
// when quiet, and only when w is a terminal.
func Enabled(w io.Writer, quiet bool) bool {
	return !quiet && IsTerminal(w)
}

// New is Start with an unknown total.
func New(w io.Writer, quiet bool, what string) (func(harness.ProcessRecord), func()) {
	return Start(w, quiet, what, 0)
}

// Start returns the callback to hand to harness.Runner.OnProcess and a
// function to call when the run ends. total is the number of processes
// expected, or 0 when unknown. Quiet gives nil and a no-op; a terminal gets
// a status line (Draw); anything else one line per process (Lines).
func Start(w io.Writer, quiet bool, what string, total int) (func(harness.ProcessRecord), func()) {
	switch {
	case quiet:
		return nil, func() {}
	case IsTerminal(w):
		return newMeter(w, what, total, true, time.Now).callbacks()
	default:
		return newMeter(w, what, total, false, time.Now).callbacks()
	}
}

// Draw redraws a status line on w whatever w is; Start decides when to.
func Draw(w io.Writer, what string) (func(harness.ProcessRecord), func()) {
	return newMeter(w, what, 0, true, time.Now).callbacks()
}

// Lines prints one line per finished process on w.
func Lines(w io.Writer, what string, total int) (func(harness.ProcessRecord), func()) {
	return newMeter(w, what, total, false, time.Now).callbacks()
}

// meter counts finished processes. Workers can finish on several
// goroutines at once, so every update holds mu.
type meter struct {
	mu      sync.Mutex
	w       io.Writer
	what    string
	total   int
	redraw  bool
	now     func() time.Time
	started time.Time
	n       int
}

func newMeter(w io.Writer, what string, total int, redraw bool, now func() time.Time) *meter {
	return &meter{w: w, what: what, total: total, redraw: redraw, now: now, started: now()}
}

func (m *meter) callbacks() (func(harness.ProcessRecord), func()) {
	return m.add, m.finish
}

func (m *meter) add(rec harness.ProcessRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	line := fmt.Sprintf("%s %s %s/%s", m.what, m.count(), rec.Scenario, rec.Condition)
	if !m.redraw {
		// A log line names the process fully, so a slow or failing child
		// can be found without the raw records.
		fmt.Fprintf(m.w, "%s %s exit %d %.1f ms\n", line, rec.Worker, rec.ExitCode, rec.DurationMS)
		return
	}
	if eta, ok := m.eta(); ok {
		line += " ETA " + eta.String()
	}
	// \r and erase-line keep the status on one terminal row.
	fmt.Fprintf(m.w, "\r\x1b[K%s", line)
}

// count is "n/total (p%)" with a known total, else "n processes".
func (m *meter) count() string {
	if m.total > 0 {
		return fmt.Sprintf("%d/%d (%d%%)", m.n, m.total, 100*m.n/m.total)
	}
	if m.n == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", m.n)
}

// eta extrapolates the mean time per process so far over those left. It is
// rounded to whole seconds so the line does not flicker.
func (m *meter) eta() (time.Duration, bool) {
	if m.total <= 0 || m.n == 0 || m.n >= m.total {
		return 0, false
	}
	per := m.now().Sub(m.started) / time.Duration(m.n)
	return (per * time.Duration(m.total-m.n)).Round(time.Second), true
}

func (m *meter) finish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.redraw && m.n > 0 {
		fmt.Fprint(m.w, "\r\x1b[K")
	}
}
