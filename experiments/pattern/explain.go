package pattern

import (
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Explain says a failed condition's verdict in words: "violation want
// false got true" reads as "some trial broke an invariant". The condition's
// findings and the table's first broken trial say which and how.
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	return scenario.EachDifference(c, func(p scenario.Path) (string, scenario.Rank) {
		if p.Key(0) == "violated" {
			return "a trial that broke an invariant (known_unsafe says whether one is expected)", scenario.RankOutcome
		}
		return "", scenario.Unranked
	})
}
