package patternfile

import (
	"fmt"
	"idemlab/experiments/engine"
	"strings"

	"idemlab/experiments/scenario"
)

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
		case engine.PointACK:
			return cut + " after the ACK"
		case engine.PointACKOpen:
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
	// A class registered since: said by the fields its trial carries.
	switch {
	case v.Racers > 0:
		return fmt.Sprintf("%s, %d racers", v.Kind, v.Racers)
	case v.Point != "":
		return fmt.Sprintf("%s, crash at %s", v.Kind, v.Point)
	case v.K > 0:
		return fmt.Sprintf("%s, crash at hit %d", v.Kind, v.K)
	case v.KillUS > 0:
		return fmt.Sprintf("%s, kill after %d µs", v.Kind, v.KillUS)
	}
	return v.Kind
}

// Text is the violation as one phrase list: "trial 10, power cut after
// the ACK: one job want 1 got 0; processed want 1 got 0", the table's
// cell and the failure line's words.
func (v Violation) Text() string {
	return strings.Join(scenario.Lines(v.Explained()), "; ")
}
