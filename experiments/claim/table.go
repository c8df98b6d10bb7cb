package claim

import (
	"fmt"
	"strings"

	"idemlab/experiments/harness"
)

// Table renders the rounds as winners per race, expected and observed, with
// the number of repetitions that agreed, followed by the mutant table.
func Table(r harness.ScenarioResult) ([]string, [][]string) {
	header := []string{"condition", "expected winners", "observed winners (repetitions)", "row after last race", "busy retries", "ok"}
	extra, _ := r.Extra.(Extra)
	var rows [][]string
	for _, c := range r.Conditions {
		exp, ok := c.Expected.([]Group)
		if !ok {
			continue
		}
		obs, _ := c.Observed.([]Group)
		var seen []string
		for _, g := range obs {
			seen = append(seen, fmt.Sprintf("%s (%d)", Winners(g.Outcome), len(g.Repetitions)))
		}
		want := ""
		if len(exp) > 0 {
			want = Winners(exp[0].Outcome)
		}
		last := ""
		if len(obs) > 0 && len(obs[0].Outcome) > 0 {
			last = rowCell(obs[0].Outcome[len(obs[0].Outcome)-1])
		}
		rows = append(rows, []string{c.Name, want, strings.Join(seen, "; "), last, fmt.Sprint(extra.BusyRetries[c.Name]), harness.Mark(c.Pass)})
	}
	if mutants := extra.Mutants; mutants != nil {
		// An empty row ends the rounds' column block, so the mutant table
		// below is aligned on its own.
		rows = append(rows, nil)
		rows = append(rows, []string{fmt.Sprintf("mutant (%d repetitions)", mutants.Repetitions), "must be killed", "killed by rounds", "ok"})
		for _, m := range mutants.Rows {
			killed := "SURVIVED"
			if m.Killed {
				killed = strings.Join(m.KilledBy, ", ")
			}
			rows = append(rows, []string{string(m.Mutant), "killed", killed, harness.Mark(m.Killed)})
		}
	}
	return header, rows
}

func rowCell(o RaceOutcome) string {
	r := o.Row
	if !r.Present {
		return "no row"
	}
	return fmt.Sprintf("count=%d claimed_at=%s ext=%s paths=%s", r.Count, r.ClaimedAt, r.ExternalID, sortedPaths(o.Paths))
}
