package explore

import (
	"strings"

	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/builtin"
)

// Explain names a failed condition's differences in the reader's words,
// duplicates first: "crash at after-job-commit outcome want one of {clean}
// got duplicate-2", or, for a histogram of trials, "outcome want one of
// {clean} got duplicate-2 in 3 trials".
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	if files, _, err := articleResult(results.ScenarioResult{Conditions: []results.ConditionResult{c}}); err == nil && len(files.Conditions) == 1 {
		return pattern.Scenario{}.Explain(files.Conditions[0])
	}
	out := make([]scenario.Explained, 0, len(c.Differences))
	for _, d := range c.Differences {
		p := scenario.ParsePath(d.Path)
		e := scenario.Explained{Words: d.Path, Expected: d.Expected, Observed: d.Observed}
		switch key := p.Key(0); {
		case key == "outcomes":
			e.Words, e.Rank = "outcomes (one per point)", scenario.RankRun
			if i, ok := p.Index(1); ok {
				point := scenario.LookupText(c.Observed, scenario.Path{{Key: "outcomes"}, {Index: i}, {Key: "point"}})
				e.Words, e.Rank = "crash at "+point+" outcome", outcomeRank(d.Observed)
			}
		case key == "histogram" || key == "timing" && p.Key(1) == "histogram":
			e.Words, e.Rank = "trials counted", scenario.RankRun
			if outcome := p.Key(len(p) - 1); outcome != "histogram" {
				e.Words, e.Observed, e.Rank = "outcome", outcome+" in "+d.Observed, outcomeRank(outcome)
			}
		case key == "timing" && p.Key(1) == "serialization_errors":
			e.Words, e.Rank = "serialization failures (40001/40P01) the racers met", scenario.RankOutcome
		case key == "points":
			e.Words, e.Rank = "crash points discovered", scenario.RankRun
		case key == "violating_points":
			e.Words, e.Rank = "points where a crash breaks an invariant", scenario.RankOutcome
		case key == "lease_lost":
			e.Words, e.Rank = "points where the stale holder found its lease lost", scenario.RankOutcome
		case key == "stale_refused":
			e.Words, e.Rank = "stale sends the receiver refused", scenario.RankSends
		}
		out = append(out, e)
	}
	return out
}

// outcomeRank puts a duplicate first; any other outcome is a headline
// outcome of its own kind.
func outcomeRank(outcome string) scenario.Rank {
	if strings.HasPrefix(outcome, strings.TrimSuffix(builtin.Duplicate(0), "0")) {
		return scenario.RankDuplicates
	}
	return scenario.RankOutcome
}
