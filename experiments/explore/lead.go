package explore

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/deliver"
)

// condView is a derived condition decoded by its kind.
type condView struct {
	results.ConditionResult
	// cond is the settings' condition, when the result has one.
	cond     Condition
	kind     string
	sweep    deliver.SweepObserved
	hits     deliver.HitsObserved
	timing   deliver.TimingObserved
	takeover deliver.TakeoverObserved
}

// readCondition decodes a derived condition's observed figures by the
// kind its expectation names.
func readCondition(c results.ConditionResult) (condView, error) {
	v := condView{ConditionResult: c}
	var e Expected
	if err := json.Unmarshal(c.Expected, &e); err != nil {
		return v, fmt.Errorf("condition %s: %w", c.Name, err)
	}
	v.kind = e.Kind
	var into any
	switch e.Kind {
	case KindSweep:
		into = &v.sweep
	case KindHits:
		into = &v.hits
	case KindKill, KindRace:
		into = &v.timing
	case KindTakeover:
		into = &v.takeover
	default:
		return v, nil
	}
	if err := json.Unmarshal(c.Observed, into); err != nil {
		return v, fmt.Errorf("condition %s: %w", c.Name, err)
	}
	return v, nil
}

// trials is how many trials the condition ran, and how many broke an
// invariant.
func (v condView) trials() (n, violating int) {
	switch v.kind {
	case KindSweep:
		return len(v.sweep.Outcomes), len(v.sweep.ViolatingPoints)
	case KindHits:
		return v.hits.Trials, v.hits.ViolatingTrials
	case KindKill, KindRace:
		return v.timing.Trials, v.timing.Timing.ViolatingTrials
	case KindTakeover:
		return len(v.takeover.Outcomes), len(v.takeover.ViolatingPoints)
	}
	return 0, 0
}

// Lead says what the exploration found, in sentences derived from the
// result alone: whether every outcome is one the oracle allows, which
// patterns broke which invariants under which faults, and which broke
// none.
func Lead(st Settings, res results.ScenarioResult, extra Extra) ([]scenario.Sentence, error) {
	byPattern := map[string][]condView{}
	var failing []string
	for _, c := range res.Conditions {
		v, err := readCondition(c)
		if err != nil {
			return nil, err
		}
		if !c.Pass {
			failing = append(failing, c.Name)
		}
		for _, sc := range st.Conditions {
			if sc.Name == c.Name && v.kind != KindDiscovery {
				v.cond = sc
				byPattern[sc.Pattern] = append(byPattern[sc.Pattern], v)
			}
		}
	}
	out := []scenario.Sentence{{Text: fmt.Sprintf("Every outcome of the %d conditions is one the oracle allows; the violations below are the patterns' own, as the model predicts.", len(res.Conditions))}}
	if len(failing) > 0 {
		out[0] = scenario.Sentence{Text: fmt.Sprintf("%d of the %d conditions ended outside the oracle's allowed outcomes: %s.", len(failing), len(res.Conditions), strings.Join(failing, ", ")), Cells: failing}
	}
	var safe []string
	for _, ps := range st.Patterns {
		vs := byPattern[ps.Name]
		if s, ok := patternSentence(ps.Name, vs, invariantsOf(ps.Name, extra)); ok {
			out = append(out, s)
		} else if len(vs) > 0 {
			safe = append(safe, ps.Name)
		}
	}
	if len(safe) > 0 {
		out = append(out, safeSentence(safe, byPattern))
	}
	for _, nr := range st.NotRun {
		out = append(out, scenario.Sentence{Text: fmt.Sprintf("Not run on PostgreSQL: %s, because %s.", nr.Part, nr.Reason)})
	}
	for _, nr := range st.OnBroker {
		out = append(out, scenario.Sentence{Text: fmt.Sprintf("Not on --broker %s: %s, because %s.", st.Broker, nr.Part, nr.Reason)})
	}
	return out, nil
}

// levelName is an isolation level as PostgreSQL names it, in capitals.
func levelName(level string) string {
	return strings.ToUpper(strings.ReplaceAll(level, "-", " "))
}

// invariantsOf lists the invariants a pattern broke, in the order of its
// first breach.
func invariantsOf(pattern string, extra Extra) []string {
	var out []string
	for _, v := range append(append([]deliver.ViolationRecord{}, extra.Violations...), extra.TimingViolations...) {
		if v.Pattern == pattern && !slices.Contains(out, v.Invariant) {
			out = append(out, v.Invariant)
		}
	}
	return out
}

// patternSentence says under which faults a pattern broke its invariants;
// ok is false when it broke none.
func patternSentence(pattern string, vs []condView, invariants []string) (scenario.Sentence, bool) {
	var faults, cells []string
	clean := 0
	for _, v := range vs {
		n, bad := v.trials()
		if bad == 0 {
			clean++
			continue
		}
		faults = append(faults, faultPhrase(v, n, bad))
		cells = append(cells, v.Name)
	}
	if len(faults) == 0 {
		return scenario.Sentence{}, false
	}
	text := fmt.Sprintf("%s breaks %s: %s", pattern, strings.Join(invariants, ", "), strings.Join(faults, "; "))
	if clean > 0 {
		text += fmt.Sprintf("; its %d other %s broke nothing", clean, scenario.Plural(clean, "condition", "conditions"))
	}
	return scenario.Sentence{Text: text + ".", Cells: cells}, true
}

// faultPhrase names the fault of one violating condition and how often it
// broke an invariant.
func faultPhrase(v condView, n, bad int) string {
	switch v.kind {
	case KindSweep:
		var pts, outs []string
		for _, po := range v.sweep.Outcomes {
			if len(po.Violations) > 0 {
				pts = append(pts, po.Point)
				if !slices.Contains(outs, po.Outcome) {
					outs = append(outs, po.Outcome)
				}
			}
		}
		ending := strings.Join(outs, ", ")
		if len(outs) > 3 {
			ending = outs[0] + " to " + outs[len(outs)-1]
		}
		return fmt.Sprintf("a crash at %s, ending %s", pointsOf(pts, n), ending)
	case KindHits:
		return fmt.Sprintf("%d of %d %s at a seeded hit", bad, n, scenario.Plural(n, "crash", "crashes"))
	case KindKill:
		return fmt.Sprintf("%d of %d %s after a seeded delay", bad, n, scenario.Plural(n, "kill", "kills"))
	case KindRace:
		with := ""
		if v.cond.Kills {
			with = ", some racers killed"
		}
		if v.cond.Isolation != "" {
			with += " under " + levelName(v.cond.Isolation)
		}
		return fmt.Sprintf("%d of %d %s of %d racers%s", bad, n, scenario.Plural(n, "race", "races"), v.cond.Racers, with)
	case KindTakeover:
		fence := "on"
		if !v.takeover.Fenced {
			fence = "off"
		}
		return fmt.Sprintf("a holder paused at %s, its lease taken over, with the fence %s", pointsOf(v.takeover.ViolatingPoints, n), fence)
	}
	return fmt.Sprintf("%d of %d trials of %s", bad, n, v.Name)
}

// pointsOf names a few points, or counts many.
func pointsOf(pts []string, of int) string {
	if len(pts) <= 3 {
		return strings.Join(pts, ", ")
	}
	return fmt.Sprintf("%d of %d points, %s to %s", len(pts), of, pts[0], pts[len(pts)-1])
}

// safeSentence says which patterns broke no invariant, and over how many
// trials of each kind.
func safeSentence(safe []string, byPattern map[string][]condView) scenario.Sentence {
	count := map[string]int{}
	var cells []string
	for _, p := range safe {
		for _, v := range byPattern[p] {
			n, _ := v.trials()
			count[v.kind] += n
			cells = append(cells, v.Name)
		}
	}
	var parts []string
	for _, k := range []struct{ kind, one, many string }{
		{KindSweep, "crash at a discovered point", "crashes at each discovered point"},
		{KindHits, "crash at a seeded hit", "crashes at a seeded hit"},
		{KindKill, "kill after a seeded delay", "kills after a seeded delay"},
		{KindRace, "race round", "race rounds"}, {KindTakeover, "takeover", "takeovers"},
	} {
		if n := count[k.kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, scenario.Plural(n, k.one, k.many)))
		}
	}
	verb := "breaks"
	if len(safe) > 1 {
		verb = "break"
	}
	return scenario.Sentence{Text: fmt.Sprintf("%s %s no invariant in any trial: %s.", scenario.JoinAnd(safe), verb, strings.Join(parts, ", ")), Cells: cells}
}
