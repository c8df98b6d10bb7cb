package pattern

import (
	"encoding/json"
	"fmt"
	"strings"

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

// Explained is the violation in words, one entry per broken invariant,
// the first led by the trial: "trial 10, power cut after the ACK: one job
// want 1 got 0", then "processed want 1 got 0".
func (v Violation) Explained() []scenario.Explained {
	out := make([]scenario.Explained, 0, len(v.Broken))
	for i, b := range v.Broken {
		words := b.Invariant
		if i == 0 {
			words = v.Where() + ": " + words
		}
		out = append(out, scenario.Explained{Words: words, Expected: b.Want, Observed: b.Got, Rank: scenario.RankOutcome})
	}
	if len(out) == 0 {
		out = append(out, scenario.Explained{Text: v.Where() + ": broke an invariant", Rank: scenario.RankOutcome})
	}
	return out
}

// Where names the trial and what was done to it: "trial 3, crash at
// after-2-exec", "trial 7, crash at before-4-commit (hit 8)", "trial 10,
// power cut after the ACK".
func (v Violation) Where() string {
	return fmt.Sprintf("trial %d, %s", v.Trial, v.fault())
}

func (v Violation) fault() string {
	switch v.Kind {
	case KindDiscovery:
		return "no fault"
	case KindPoint:
		return "crash at " + v.Point
	case KindPower:
		cut := "power cut"
		if v.Model != "" {
			cut = v.Model + " power cut"
		}
		switch v.Point {
		case PointACK:
			return cut + " after the ACK"
		case PointACKOpen:
			return cut + " after the ACK, the connection open"
		}
		return cut + " at " + v.Point
	case KindHits:
		if v.Point != "" {
			return fmt.Sprintf("crash at %s (hit %d)", v.Point, v.K)
		}
		return fmt.Sprintf("crash at hit %d", v.K)
	case KindKill:
		return fmt.Sprintf("kill after %d µs", v.KillUS)
	case KindRace:
		return fmt.Sprintf("%d racers", v.Racers)
	}
	return v.Kind
}

// Text is the violation as one phrase list: "trial 10, power cut after
// the ACK: one job want 1 got 0; processed want 1 got 0", the table's
// cell and the failure line's words.
func (v Violation) Text() string {
	return strings.Join(scenario.Lines(v.Explained()), "; ")
}
