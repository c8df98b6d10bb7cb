package batch

import (
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Compare says each condition in a few words for a report that sets
// folders side by side: the status of each run in order, and the sends
// done twice, per distinct outcome with how many trials showed it. The
// database is the journal's pragmas on SQLite, or what its sessions read
// back on PostgreSQL, which the fold checks every journal run read back.
func (Scenario) Compare(st Settings, res results.ScenarioResult, ex Extra) scenario.Compared {
	c := scenario.Compared{
		Database: scenario.DatabaseWords(st.SQLite, st.Postgres, ex.PostgresReadBack),
		Outcomes: map[string]string{},
		Legend:   "batch: each run's status in order, then the duplicates (sends the receiver accepted again for an item it had), with how many trials showed it",
	}
	for _, cr := range res.Conditions {
		var obs []Outcome
		if json.Unmarshal(cr.Observed, &obs) != nil {
			continue
		}
		var order []string
		count := map[string]int{}
		for _, o := range obs {
			w := compareWords(o)
			if count[w] == 0 {
				order = append(order, w)
			}
			count[w]++
		}
		parts := make([]string, 0, len(order))
		for _, w := range order {
			parts = append(parts, fmt.Sprintf("%s (%d)", w, count[w]))
		}
		c.Outcomes[cr.Name] = strings.Join(parts, "; ")
	}
	return c
}

func compareWords(o Outcome) string {
	statuses := make([]string, 0, len(o.Runs))
	for _, r := range o.Runs {
		statuses = append(statuses, r.Status)
	}
	return fmt.Sprintf("%s, %d duplicates", strings.Join(statuses, " → "), o.Duplicates)
}
