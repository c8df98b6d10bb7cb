package durability

import (
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Explain names a failed condition's differences by the point where the
// cut came, duplicates first: "cut at after-job-commit outcome want
// rolled-back got lost-acked". The observed value maps each trial (a
// point, and under the torn mode "point#seed") to its figures, and the
// point after the worker's exit 0 is "ack".
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	return scenario.EachDifference(c, func(p scenario.Path) (string, scenario.Rank) {
		point := p.Key(0)
		if point == "" {
			return "", scenario.Unranked
		}
		where := "cut at " + point
		if point == PointACK {
			where = "cut after the ACK"
		}
		switch p.Key(1) {
		case "outcome":
		case "rows_lost", "recovered", "views":
			return where + " " + p.Key(1), scenario.RankOutcome
		default:
			return where, scenario.RankRun
		}
		obs := scenario.LookupText(c.Observed, scenario.Path{{Key: point}, {Key: "outcome"}})
		if slices.Contains(strings.Split(obs, "+"), TagDuplicate) {
			return where + " outcome", scenario.RankDuplicates
		}
		return where + " outcome", scenario.RankOutcome
	})
}
