package pattern

import (
	"fmt"

	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	pf "idemlab/experiments/subject/patternfile"
	wp "idemlab/worker/pattern"
)

// Compare says each condition in a few words for a report that sets a
// SQLite folder beside a PostgreSQL one: how many trials held the
// pattern's invariants or broke them, whether the file expects the break
// (known_unsafe), and which invariants broke. A power condition's name
// carries SQLite's journal_mode/synchronous, so it is placed in the row
// "pattern/power" with the setting; the other classes have the same name
// on both backends.
func (Scenario) Compare(st Settings, res results.ScenarioResult, ex Extra) scenario.Compared {
	c := scenario.Compared{
		Database: patternDatabase(st),
		Outcomes: map[string]string{},
		Rows:     map[string]scenario.Row{},
		Legend:   "pattern: trials that held the file's invariants or broke them, of the condition's trials; \"expected\" where the file lists the fault as known_unsafe on this backend; then each broken invariant and the failed deliveries by class",
	}
	pats := map[string]Pattern{}
	for _, p := range st.Patterns {
		pats[p.File.Name] = p
	}
	conds := map[string]Condition{}
	for _, cond := range st.Conditions {
		conds[cond.Name] = cond
	}
	extras := map[string]ConditionExtra{}
	for _, p := range ex.Patterns {
		for _, ce := range p.Conditions {
			extras[ce.Name] = ce
		}
	}
	for _, cr := range res.Conditions {
		cond, ok := conds[cr.Name]
		if !ok {
			continue
		}
		if cond.Fault == wp.FaultPower {
			c.Rows[cr.Name] = scenario.Row{Key: cond.Pattern + "/" + wp.FaultPower, Setting: cond.Power}
		}
		if ce, ok := extras[cr.Name]; ok {
			c.Outcomes[cr.Name] = extraWords(ce, KnownUnsafe(pats[cond.Pattern].File, cond, st.Target(), st.KnownUnsafeRule))
		}
	}
	return c
}

// patternDatabase names the database every acknowledging worker read
// back, which the fold checks.
func patternDatabase(st Settings) string {
	if st.Postgres != nil {
		return fmt.Sprintf("PostgreSQL, %s, synchronous_commit=%s, as every session read them back", st.Postgres.Isolation, st.Postgres.SynchronousCommit)
	}
	return scenario.DatabaseWords(pf.SQLite(), nil, nil) + "; a power condition, its own setting"
}

// extraWords says a condition's trials: "held 14/14 trials", "broke 6/14
// trials (expected): one-send ×6".
func extraWords(ce ConditionExtra, unsafe Unsafety) string {
	var w string
	switch {
	case ce.Violating == 0 && unsafe == UnsafeHere:
		w = fmt.Sprintf("held %d/%d trials (expected to break)", ce.Trials, ce.Trials)
	case ce.Violating == 0 && unsafe == UnsafeSomeSetting:
		w = fmt.Sprintf("held %d/%d trials (some power setting expected to break)", ce.Trials, ce.Trials)
	case ce.Violating == 0:
		w = fmt.Sprintf("held %d/%d trials", ce.Trials, ce.Trials)
	case unsafe != Safe:
		w = fmt.Sprintf("broke %d/%d trials (expected)", ce.Violating, ce.Trials)
	default:
		w = fmt.Sprintf("broke %d/%d trials", ce.Violating, ce.Trials)
	}
	if b := engine.Counts(ce.Broken, "%s ×%d"); b != "" {
		w += ": " + b
	}
	if f := engine.Counts(ce.Failed, "%s ×%d"); f != "" {
		w += "; failed deliveries: " + f
	}
	return w
}
