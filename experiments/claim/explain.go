package claim

import (
	"encoding/json"
	"fmt"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Explain names a failed condition's differences by race, winners first:
// "race B winners want 0 got 1". When the repetitions split into several
// outcomes, the difference is a count of groups, which hides the answer;
// each group that differs from the expected outcome is then compared
// field by field and named with its repetitions.
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	var out []scenario.Explained
	for _, d := range c.Differences {
		p := scenario.ParsePath(d.Path)
		if len(p) == 0 {
			if split := explainGroups(c); len(split) > 0 {
				out = append(out, split...)
				continue
			}
		}
		e := scenario.Explained{Words: d.Path, Expected: d.Expected, Observed: d.Observed}
		if words, rank := claimWords(c.Expected, p); words != "" {
			e.Words, e.Rank = words, rank
		}
		out = append(out, e)
	}
	return out
}

// claimWords names a path of a round's groups ("[0].outcome[1].winners")
// or of a mutant's verdict ("killed").
func claimWords(expected json.RawMessage, p scenario.Path) (string, scenario.Rank) {
	if p.Key(0) == "killed" {
		return "mutant killed", scenario.RankOutcome
	}
	if len(p) == 0 {
		return "outcomes across the repetitions", scenario.RankRun
	}
	if _, ok := p.Index(0); !ok {
		return "", scenario.Unranked
	}
	switch p.Key(1) {
	case "repetitions":
		return "repetitions with this outcome", scenario.RankRun
	case "outcome":
	default:
		return "", scenario.Unranked
	}
	r, ok := p.Index(2)
	if !ok {
		return "races", scenario.RankRun
	}
	race := scenario.LookupText(expected, scenario.Path{p[0], {Key: "outcome"}, {Index: r}, {Key: "race"}})
	if race == "" {
		race = fmt.Sprintf("%d", r+1)
	}
	return raceWords("race "+race, p[3:])
}

// raceWords names a field of one race's outcome.
func raceWords(race string, p scenario.Path) (string, scenario.Rank) {
	switch p.Key(0) {
	case "winners":
		return race + " winners", scenario.RankWinners
	case "workers":
		return race + " racers", scenario.RankRun
	case "paths":
		return race + " claims decided by " + p.Keys(1), scenario.RankRun
	case "row":
		return race + " row " + p.Keys(1), scenario.RankRows
	case "race":
		return race + " name", scenario.RankRun
	}
	return race + " " + p.Keys(0), scenario.Unranked
}

// explainGroups compares each observed group that differs from the one
// expected outcome with it, and names its repetitions.
func explainGroups(c results.ConditionResult) []scenario.Explained {
	var exp, obs []Group
	if json.Unmarshal(c.Expected, &exp) != nil || json.Unmarshal(c.Observed, &obs) != nil || len(exp) != 1 {
		return nil
	}
	var out []scenario.Explained
	for _, g := range obs {
		reps := scenario.Numbered("repetition", "repetitions", g.Repetitions)
		for _, d := range results.DiffPaths("", exp[0].Outcome, g.Outcome) {
			p := scenario.ParsePath(d.Path)
			e := scenario.Explained{Words: "races", Expected: d.A, Observed: d.B, Rank: scenario.RankRun}
			if r, ok := p.Index(0); ok && r < len(exp[0].Outcome) {
				e.Words, e.Rank = raceWords("race "+exp[0].Outcome[r].Race, p[1:])
			}
			e.Words += " (" + reps + ")"
			out = append(out, e)
		}
	}
	return out
}
