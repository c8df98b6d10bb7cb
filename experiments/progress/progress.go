// Package progress shows a spinner with a process count on stderr while
// long runs spawn workers. It draws only on a terminal, so CI logs and
// piped output stay clean.
package progress

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"idemlab/experiments/harness"
)

// Enabled says whether progress should be drawn on w: never when quiet,
// and only when w is a terminal.
func Enabled(w io.Writer, quiet bool) bool {
	if quiet {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns the callback to hand to harness.Runner.OnProcess and a
// function that clears the line when the run ends. Both are no-ops when
// progress is not Enabled.
func New(w io.Writer, quiet bool, what string) (func(harness.ProcessRecord), func()) {
	if !Enabled(w, quiet) {
		return nil, func() {}
	}
	return Draw(w, what)
}

// Draw always draws on w; New decides whether to call it.
func Draw(w io.Writer, what string) (func(harness.ProcessRecord), func()) {
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("processes"),
		progressbar.OptionShowIts(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(0),
	)
	on := func(rec harness.ProcessRecord) {
		bar.Describe(fmt.Sprintf("%s %s/%s", what, rec.Scenario, rec.Condition))
		_ = bar.Add(1)
	}
	return on, func() { _ = bar.Finish() }
}
