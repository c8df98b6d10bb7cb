package explore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/deliver"
)

// Compare says each condition in a few words for a report that sets a
// SQLite folder beside a PostgreSQL one. On PostgreSQL a race's name
// carries its isolation level ("separate-commit/serializable/timing-race-4")
// and SQLite's does not, so every condition is placed in the row of its
// pattern and kind ("separate-commit/timing-race-4") with the level as its
// setting: the two backends' races of one pattern stand side by side.
func (Scenario) Compare(st Settings, res results.ScenarioResult, extra Extra) scenario.Compared {
	c := scenario.Compared{
		Database: exploreDatabase(st),
		Outcomes: map[string]string{},
		Rows:     map[string]scenario.Row{},
		Legend:   "explore: outcomes after the recovery in k/n trials or race rounds (clean: 1 job, every item sent once; duplicate-N: N jobs; duplicates-N: N extra sends), kills that landed, and on PostgreSQL the 40001/40P01 failures the racers ran again; a sweep or takeover, the points where an invariant broke",
	}
	conds := st.conditionsByName()
	for _, cr := range res.Conditions {
		cond, ok := conds[cr.Name]
		if !ok {
			continue
		}
		c.Rows[cr.Name] = scenario.Row{Key: cond.Pattern + "/" + lastSegment(cr.Name), Setting: cond.Isolation}
		if words, err := conditionWords(cond, cr.Observed); err == nil {
			c.Outcomes[cr.Name] = words
		}
	}
	files, _, err := articleResult(res)
	for i, a := range st.articles() {
		if err != nil || i >= len(extra.Articles) {
			break
		}
		// The article files' conditions in the pattern scenario's words.
		pc := pattern.Scenario{}.Compare(a, only(files, a), extra.Articles[i])
		maps.Copy(c.Rows, pc.Rows)
		maps.Copy(c.Outcomes, pc.Outcomes)
		placeLevel(c.Rows, a)
		if i == 0 {
			c.Legend += "; " + pc.Legend
		}
	}
	return c
}

// placeLevel puts the conditions of an article file raced under one
// PostgreSQL level (pattern "separate-commit/serializable") in the row of
// the file's pattern and fault ("separate-commit/concurrent"), where a
// SQLite folder's race of that file stands, with the level as the cell's
// setting.
func placeLevel(rows map[string]scenario.Row, a pattern.Settings) {
	level := a.Target().Isolation.String()
	if level == "" {
		return
	}
	for _, cond := range a.Conditions {
		base := strings.TrimSuffix(cond.Pattern, "/"+level)
		rows[cond.Name] = scenario.Row{Key: base + "/" + cond.Fault, Setting: level}
	}
}

// exploreDatabase names the database the workers used: SQLite's pragmas,
// which every acknowledging worker read back, or PostgreSQL's
// synchronous_commit with the level each condition's sessions read back.
func exploreDatabase(st Settings) string {
	if st.Backend == "" {
		return scenario.DatabaseWords(st.SQLite, nil, nil)
	}
	return fmt.Sprintf("PostgreSQL, synchronous_commit=%s, the isolation level per condition (%s), as every session read them back", st.SynchronousCommit, strings.Join(st.Isolations, ", "))
}

func lastSegment(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// conditionWords decodes a condition's observed figure by its kind and
// says it.
func conditionWords(c Condition, observed json.RawMessage) (string, error) {
	switch c.Kind {
	case KindDiscovery:
		var o deliver.DiscoveryObserved
		err := json.Unmarshal(observed, &o)
		return fmt.Sprintf("passed %d points", len(o.Points)), err
	case KindSweep:
		var o deliver.SweepObserved
		err := json.Unmarshal(observed, &o)
		return pointsWords(o.Points, o.ViolatingPoints, firstOutcome(o)), err
	case KindHits:
		var o deliver.HitsObserved
		err := json.Unmarshal(observed, &o)
		return histogramWords(o.Histogram, o.Trials, "trials"), err
	case KindKill, KindRace:
		var o deliver.TimingObserved
		err := json.Unmarshal(observed, &o)
		return timingWords(c, o), err
	case KindTakeover:
		var o deliver.TakeoverObserved
		err := json.Unmarshal(observed, &o)
		return fmt.Sprintf("%s; %d leases lost, %d stale sends refused", pointsWords(o.Points, o.ViolatingPoints, ""), o.LeaseLost, o.StaleRefused), err
	}
	return "", fmt.Errorf("condition %s: kind %q", c.Name, c.Kind)
}

// firstOutcome is the outcome at the sweep's first violating point.
func firstOutcome(o deliver.SweepObserved) string {
	for _, p := range o.Outcomes {
		if len(o.ViolatingPoints) > 0 && p.Point == o.ViolatingPoints[0] {
			return p.Outcome
		}
	}
	return ""
}

// pointsWords says at how many of the points an invariant broke, and the
// first of them with its outcome when known.
func pointsWords(points, violating []string, first string) string {
	if len(violating) == 0 {
		return fmt.Sprintf("held at %d/%d points", len(points), len(points))
	}
	w := fmt.Sprintf("broke at %d/%d points, first %s", len(violating), len(points), violating[0])
	if first != "" {
		w += " (" + first + ")"
	}
	return w
}

// histogramWords says how many of n trials ended in each outcome:
// "clean in 4/6, duplicate-2 in 2/6 rounds".
func histogramWords(h map[string]int, n int, unit string) string {
	if n == 0 {
		return "no " + unit
	}
	var parts []string
	for _, o := range byCount(slices.Sorted(maps.Keys(h))) {
		parts = append(parts, fmt.Sprintf("%s in %d/%d", o, h[o], n))
	}
	return strings.Join(parts, ", ") + " " + unit
}

// timingWords says a kill or race condition: its outcomes, the kills
// that landed, and the serialization failures its racers ran again.
func timingWords(c Condition, o deliver.TimingObserved) string {
	unit := "trials"
	if c.Kind == KindRace {
		unit = "rounds"
	}
	w := histogramWords(o.Timing.Histogram, o.Trials, unit)
	if o.Timing.Kills > 0 {
		w += fmt.Sprintf(", %d/%d kills landed", o.Timing.Landed, o.Timing.Kills)
	}
	switch n := o.Timing.SerializationErrors; {
	case n == 1:
		w += ", 1 40001/40P01 retry"
	case n > 1:
		w += fmt.Sprintf(", %d 40001/40P01 retries", n)
	}
	return w
}
