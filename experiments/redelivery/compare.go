package redelivery

import (
	"encoding/json"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Compare says each condition's deliveries in a few words, the rows and
// exit code after each, for a report that sets a SQLite folder beside a
// PostgreSQL one; the database is what the workers read back.
func (Scenario) Compare(st Settings, res results.ScenarioResult, x Extra) scenario.Compared {
	sqlite := x.SQLiteReadBack
	if sqlite.JournalMode == "" {
		sqlite = st.SQLite
	}
	c := scenario.Compared{
		Database: scenario.DatabaseWords(sqlite, st.Postgres, x.PostgresReadBack),
		Outcomes: map[string]string{},
		Legend:   "redelivery: jobs / processed rows (exit code) after each delivery, in order; 17 = crashed on purpose",
	}
	for _, cr := range res.Conditions {
		var obs []Delivery
		if json.Unmarshal(cr.Observed, &obs) != nil {
			continue
		}
		parts := make([]string, 0, len(obs))
		for _, d := range obs {
			parts = append(parts, text(d))
		}
		c.Outcomes[cr.Name] = strings.Join(parts, " → ")
	}
	return c
}
