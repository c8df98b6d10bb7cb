package pattern

import (
	"encoding/json"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Explain says a failed condition's verdict in words, from its recorded
// figures: an unexpected break as its first trial and what that trial
// broke ("trial 10, power cut after the ACK: one job want 1 got 0"), an
// expected break that did not show as "held, but known_unsafe lists it:
// the run fails". The run's failure line, summary.json, JUnit and verify
// all say it through here.
func (Scenario) Explain(c results.ConditionResult) []scenario.Explained {
	var e Expected
	var o Verdict
	// The figures were checked when the verdict was derived; a figure
	// that does not decode leaves its difference in the path's words.
	okE, okO := json.Unmarshal(c.Expected, &e) == nil, json.Unmarshal(c.Observed, &o) == nil
	var out []scenario.Explained
	for _, d := range c.Differences {
		if scenario.ParsePath(d.Path).Key(0) != "violated" || !okE || !okO {
			out = append(out, scenario.Explained{Words: d.Path, Expected: d.Expected, Observed: d.Observed})
			continue
		}
		out = append(out, Said(e, o)...)
	}
	return out
}

// Said is a condition's miss in words, from its expected and observed
// figures alone, so that the run and verify say the same.
func Said(e Expected, o Verdict) []scenario.Explained {
	switch {
	case o.Violated && !e.Violated && o.First != nil:
		return o.First.Explained()
	case o.Violated && !e.Violated:
		return []scenario.Explained{{Text: "a trial broke an invariant, and known_unsafe does not list the class", Rank: scenario.RankOutcome}}
	case !o.Violated && e.InSomeSetting:
		return []scenario.Explained{{Text: "held under every power setting, but known_unsafe lists power: the run fails", Rank: scenario.RankOutcome}}
	case !o.Violated && e.Violated:
		return []scenario.Explained{{Text: HeldButListed, Rank: scenario.RankOutcome}}
	}
	return nil
}

// HeldButListed is the miss of a class known_unsafe lists that broke no
// invariant: the listing may be stale, since the bug it names is fixed.
const HeldButListed = "held, but known_unsafe lists it: the run fails"
