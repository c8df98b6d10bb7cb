package batch

import (
	"fmt"
	"strconv"
	"strings"

	"idemlab/experiments/harness"
)

// Table renders one row per mode and condition with the first trial's
// counts (every trial is checked; a failing one marks the row ✗), where
// an observation that differs from the oracle shows the expected value
// after "want", and the timing averages over the trials.
func Table(r harness.ScenarioResult) ([]string, [][]string) {
	header := []string{"condition", "run 1", "run 2", "run 3", "held", "dup", "once", "avg ms", "floor", "ratio", "ok"}
	extra, _ := r.Extra.(*Extra)
	var rows [][]string
	for i, c := range r.Conditions {
		exp, _ := c.Expected.([]Outcome)
		obs, _ := c.Observed.([]Outcome)
		if len(obs) == 0 {
			rows = append(rows, []string{c.Name, "-", "-", "-", "-", "-", "-", "-", "-", "-", harness.Mark(c.Pass)})
			continue
		}
		o := obs[0]
		var e *Outcome
		if len(exp) > 0 {
			e = &exp[0]
		}
		row := []string{c.Name}
		for n := 0; n < 3; n++ {
			row = append(row, want(runCell(o.Runs, n), e, func(x Outcome) string { return runCell(x.Runs, n) }))
		}
		row = append(row,
			want(heldCell(o.Runs), e, func(x Outcome) string { return heldCell(x.Runs) }),
			want(strconv.Itoa(o.Duplicates), e, func(x Outcome) string { return strconv.Itoa(x.Duplicates) }),
			want(strconv.Itoa(o.SentOnceItems), e, func(x Outcome) string { return strconv.Itoa(x.SentOnceItems) }),
		)
		if extra != nil && i < len(extra.Timings) {
			t := extra.Timings[i]
			ratio := fmt.Sprintf("%.3f", t.Ratio)
			if t.WithinTarget != nil && !*t.WithinTarget {
				ratio += " >" + strconv.FormatFloat(t.Target, 'g', -1, 64)
			}
			row = append(row, fmt.Sprintf("%.2f", t.AvgMS), fmt.Sprintf("%.2f", t.FloorMS), ratio)
		} else {
			row = append(row, "-", "-", "-")
		}
		rows = append(rows, append(row, harness.Mark(c.Pass)))
	}
	return header, rows
}

func want(got string, e *Outcome, f func(Outcome) string) string {
	if e == nil {
		return got
	}
	if w := f(*e); w != got {
		return got + " want " + w
	}
	return got
}

// runCell is "executed/skipped status", "exit 18 at item:step" or
// "crash 17".
func runCell(runs []RunObs, n int) string {
	if n >= len(runs) {
		return "-"
	}
	r := runs[n]
	switch r.Status {
	case StatusCrashed:
		return fmt.Sprintf("crash %d", r.ExitCode)
	}
	s := fmt.Sprintf("%d/%d %s", r.ExecutedSteps, r.SkippedSteps, r.Status)
	if r.Failed != "" {
		s += fmt.Sprintf(" %s %s (%d)", r.Failed, r.ErrorType, r.ExitCode)
	}
	return s
}

// AllHeld lists every run's held items, once each, in the order the runs
// first held them.
func AllHeld(runs []RunObs) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, h := range r.Held {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// heldCell renders AllHeld for the summary table.
func heldCell(runs []RunObs) string {
	out := AllHeld(runs)
	if len(out) == 0 {
		return "-"
	}
	if len(out) > 2 {
		return strings.Join(out[:2], " ") + fmt.Sprintf(" +%d", len(out)-2)
	}
	return strings.Join(out, " ")
}
