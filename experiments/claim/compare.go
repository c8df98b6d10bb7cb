package claim

import (
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Compare says each condition in a few words for a report that sets a
// SQLite folder beside a PostgreSQL one: the winners of each race with
// how many repetitions showed them, and on PostgreSQL the 40001 and 40P01
// retries the racers needed; a mutant, how many of
// its rounds killed it. The database is what the racers read back.
func (Scenario) Compare(st Settings, res results.ScenarioResult, ex Extra) scenario.Compared {
	sqlite := st.SQLite
	if ex.SQLiteReadBack != nil {
		sqlite = *ex.SQLiteReadBack
	}
	c := scenario.Compared{
		Database: scenario.DatabaseWords(sqlite, st.Postgres, ex.PostgresReadBack),
		Outcomes: map[string]string{},
		Legend:   "claim: winners per race (repetitions showing them), then PostgreSQL's retries when there were any; a mutant: the rounds that killed it",
	}
	mutants := map[string]MutantRow{}
	if ex.Mutants != nil {
		for _, m := range ex.Mutants.Rows {
			mutants["mutants/"+string(m.Mutant)] = m
		}
	}
	for _, cr := range res.Conditions {
		if m, ok := mutants[cr.Name]; ok {
			c.Outcomes[cr.Name] = mutantWords(m)
			continue
		}
		if reason, ok := st.notRun(cr.Name); ok {
			c.Outcomes[cr.Name] = "not applicable: " + reason
			continue
		}
		var obs []Group
		if json.Unmarshal(cr.Observed, &obs) != nil {
			continue
		}
		var parts []string
		for _, g := range obs {
			parts = append(parts, fmt.Sprintf("%s (%d)", Winners(g.Outcome), len(g.Repetitions)))
		}
		words := strings.Join(parts, "; ")
		if r := retriesWords(st, ex, cr.Name); r != "" {
			words += "; " + r
		}
		c.Outcomes[cr.Name] = words
	}
	return c
}

// retriesWords is a condition's retries on PostgreSQL, "" when there
// were none. SQLite's SQLITE_BUSY retries are left out: they measure how
// long the racers queued for the file's lock, which changes no outcome,
// and the scenario declares them a measurement.
func retriesWords(st Settings, ex Extra, cond string) string {
	if st.Postgres == nil {
		return ""
	}
	var parts []string
	if n := ex.SerializationRetries[cond]; n > 0 {
		parts = append(parts, retries(n, "40001"))
	}
	if n := ex.DeadlockRetries[cond]; n > 0 {
		parts = append(parts, retries(n, "40P01"))
	}
	return strings.Join(parts, ", ")
}

func mutantWords(m MutantRow) string {
	rounds := len(m.KilledBy) + len(m.Survived)
	if !m.Killed {
		return fmt.Sprintf("survived all %d rounds", rounds)
	}
	return fmt.Sprintf("killed by %d of %d rounds", len(m.KilledBy), rounds)
}

func retries(n int, code string) string {
	if n == 1 {
		return "1 " + code + " retry"
	}
	return fmt.Sprintf("%d %s retries", n, code)
}
