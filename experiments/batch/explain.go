package batch

import (
	"fmt"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Explain names a failed condition's differences by trial, duplicates and
// sends first, and joins the same miss in several trials into one:
// "trials 1–5 duplicates want 0 got 1". The observed value is one outcome
// per trial, so index i is trial i+1.
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	var misses []scenario.Miss
	var rest []scenario.Explained
	for _, d := range c.Differences {
		p := scenario.ParsePath(d.Path)
		t, ok := p.Index(0)
		if !ok {
			e := scenario.Explained{Words: d.Path, Expected: d.Expected, Observed: d.Observed}
			if len(p) == 0 {
				e.Words, e.Rank = "trials", scenario.RankRun
			}
			rest = append(rest, e)
			continue
		}
		words, rank := outcomeWords(p[1:])
		misses = append(misses, scenario.Miss{N: t + 1, Explained: scenario.Explained{Words: words, Expected: d.Expected, Observed: d.Observed, Rank: rank}})
	}
	return append(scenario.MergeNumbered("trial", "trials", misses), rest...)
}

// outcomeWords names a field of one trial's outcome.
func outcomeWords(p scenario.Path) (string, scenario.Rank) {
	switch p.Key(0) {
	case "duplicates":
		return "duplicates", scenario.RankDuplicates
	case "accepts":
		return "accepts at the receiver", scenario.RankSends
	case "sent_once_items":
		return "items sent once", scenario.RankSends
	case "steps":
		return "steps executed by the last run", scenario.RankOutcome
	case "journal_rows":
		return "journal rows " + p.Keys(1), scenario.RankRows
	case "runs":
		return numberedWords("run", p), scenario.RankRun
	case "resolved":
		return numberedWords("resolve", p), scenario.RankRun
	}
	return p.Keys(0), scenario.Unranked
}

// numberedWords names a field of the n-th run or resolve: "run 2 status",
// "run 1 executed_by_step send"; without an index, the count of them.
func numberedWords(noun string, p scenario.Path) string {
	i, ok := p.Index(1)
	if !ok {
		return noun + "s"
	}
	words := fmt.Sprintf("%s %d", noun, i+1)
	if rest := p.Keys(2); rest != "" {
		words += " " + rest
	}
	return words
}
