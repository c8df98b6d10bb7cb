package redelivery

import (
	"fmt"

	"idemlab/experiments/harness"
)

// Table renders the scenario like the article's table: rows
// follow_up_jobs / processed_events (exit code) after each delivery, with
// the expected value shown where the observation differs.
func Table(r harness.ScenarioResult) ([]string, [][]string) {
	header := []string{"condition", "after delivery 1 (exit)", "after delivery 2 (exit)", "ok"}
	var rows [][]string
	for _, c := range r.Conditions {
		exp, _ := c.Expected.([]Delivery)
		obs, _ := c.Observed.([]Delivery)
		row := []string{c.Name}
		for i := 0; i < 2; i++ {
			row = append(row, cell(exp, obs, i))
		}
		rows = append(rows, append(row, harness.Mark(c.Pass)))
	}
	return header, rows
}

func cell(exp, obs []Delivery, i int) string {
	if i >= len(obs) {
		return "-"
	}
	s := fmt.Sprintf("%d / %d (%d)", obs[i].FollowUpJobs, obs[i].ProcessedEvents, obs[i].ExitCode)
	if i < len(exp) {
		e := fmt.Sprintf("%d / %d (%d)", exp[i].FollowUpJobs, exp[i].ProcessedEvents, exp[i].ExitCode)
		if e != s {
			s += " want " + e
		}
	}
	return s
}
