package redelivery

import (
	"fmt"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Explain names a failed condition's differences by delivery, follow-up
// jobs first: "delivery 2 follow_up_jobs want 1 got 2". The observed value
// is one entry per delivery, so index i is delivery i+1.
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	return scenario.EachDifference(c, func(p scenario.Path) (string, scenario.Rank) {
		i, ok := p.Index(0)
		if !ok {
			if len(p) == 0 {
				return "deliveries", scenario.RankRun
			}
			return "", scenario.Unranked
		}
		who := fmt.Sprintf("delivery %d", i+1)
		switch p.Key(1) {
		case "follow_up_jobs":
			return who + " follow_up_jobs", scenario.RankJobs
		case "processed_events":
			return who + " processed_events", scenario.RankRows
		case "exit_code":
			return who + " exit code", scenario.RankRun
		case "crashed_at":
			return who + " crash point", scenario.RankRun
		case "points":
			if j, ok := p.Index(2); ok {
				return fmt.Sprintf("%s point %d passed", who, j+1), scenario.RankRun
			}
			return who + " points passed", scenario.RankRun
		case "":
			return who, scenario.RankRun
		}
		return who + " " + p.Keys(1), scenario.RankRun
	})
}
