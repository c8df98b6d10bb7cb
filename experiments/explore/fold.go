package explore

import (
	"fmt"

	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/deliver"
)

// Extra is the scenario's derived extra table: the built-in subjects'
// tables, as their runner's fold derives them, and the article files'.
type Extra struct {
	deliver.Tables
	// Articles is the pattern scenario's extra of the article files.
	Articles []pattern.Extra `json:"articles,omitempty"`
}

// Fold derives the built-in subjects' conditions from the records with
// their runner's fold (deliver.Folding), once the settings describe each
// subject as registered, and the article files' with the pattern
// scenario's fold.
func (Scenario) Fold(st Settings, all results.Records) (scenario.Folded, []results.Finding) {
	rec, files := splitRecords(st.Articles, all)
	var c results.Checker
	subjects := map[string]Pattern{}
	for i, ps := range st.Patterns {
		pat, ok := LookupPattern(ps.Name)
		if !ok {
			c.Add(results.ResultsFile, fmt.Sprintf("scenarios[explore].settings.patterns[%d]", i), "pattern %q is not registered", ps.Name)
			continue
		}
		if ps != settingOf(pat) {
			c.Add(results.ResultsFile, fmt.Sprintf("scenarios[explore].settings.patterns[%d]", i), "is %s, the registered pattern has other workers or window", results.Compact(ps))
		}
		subjects[ps.Name] = pat
	}
	fo := deliver.Folding{Scenario: Name, DBName: DBName, Seed: st.Seed, Params: st.params(), Subjects: subjects,
		Replay: func(c deliver.Condition, i int) string { return replay(st, c, i) }}
	for _, c := range st.Conditions {
		fo.Conditions = append(fo.Conditions, st.fold(c))
	}
	folded, tables, found := fo.Fold(rec)
	extra := Extra{Tables: tables}
	findings := foldArticles(st, files, &folded, &extra)
	folded.Extra = extra
	return folded, append(append(findings, c.Findings...), found...)
}

// fold is condition c as the runner and its fold read it.
func (st Settings) fold(c Condition) deliver.Condition {
	return deliver.Condition{
		Name: c.Name, Subject: c.Pattern, Label: c.Kind, Class: c.class(), Indices: c.Trials, Racers: c.Racers,
		Cond: deliver.Cond{Unfenced: c.Unfenced, Kills: c.Kills, Spec: st.spec(c)},
	}
}
