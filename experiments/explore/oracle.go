package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/engine"
	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/experiments/subject/builtin"
	"idemlab/experiments/subject/deliver"
	we "idemlab/worker/explore"
	"idemlab/worker/store"
)

// Expected is a condition's oracle. Outcomes at a crash point the oracle
// cannot name form a set, so the check is membership, not equality.
type Expected struct {
	Kind string `json:"kind"`
	// Allowed are the outcomes a trial may end in (crash-after-hits, kill
	// and race trials).
	Allowed []string `json:"allowed,omitempty"`
	// Window bounds the points at which a crash must violate; Inside and
	// Outside are the outcomes allowed there (sweep). Discovery must pass
	// the window's two points, in order.
	Window  *Window  `json:"window,omitempty"`
	Inside  []string `json:"inside,omitempty"`
	Outside []string `json:"outside,omitempty"`
	// Fenced (takeover): the stale holder must find its lease lost at
	// every point and every send it retries must be refused as stale;
	// unfenced, neither happens.
	Fenced bool `json:"fenced,omitempty"`
	// Shard, for a sweep or takeover run in shards, is the part whose
	// points the run tried; the rest are other shards' to try.
	Shard *shard.Part `json:"shard,omitempty"`
	// NoSerialization (a race on PostgreSQL under READ COMMITTED): no
	// racer may meet 40001 or 40P01.
	NoSerialization bool `json:"no_serialization,omitempty"`
	// File is an article pattern file's condition's oracle (KindFile):
	// the pattern scenario's, from the file's known_unsafe.
	File *pattern.Expected `json:"file,omitempty"`
}

// Expect is the oracle over the recorded settings.
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, c := range st.Conditions {
		e, err := ExpectCondition(st, c)
		if err != nil {
			return nil, err
		}
		out = append(out, scenario.Expected{Condition: c.Name, Value: e, Scheduled: c.Timing()})
	}
	files, err := articleExpect(st.articles())
	return append(files, out...), err
}

// ExpectCondition states one condition's allowed outcomes. A crash at an
// unknown point may end in any outcome the model reaches by crashing at
// one of its points or not at all; inside the window only the model's
// crash outcome there, outside it only the clean one.
func ExpectCondition(st Settings, c Condition) (Expected, error) {
	pat, ok := LookupPattern(c.Pattern)
	if !ok {
		return Expected{}, fmt.Errorf("condition %s: pattern %q is not registered", c.Name, c.Pattern)
	}
	var ps *PatternSetting
	for i := range st.Patterns {
		if st.Patterns[i].Name == c.Pattern {
			ps = &st.Patterns[i]
		}
	}
	if ps == nil {
		return Expected{}, fmt.Errorf("condition %s: pattern %q is not in the settings' patterns", c.Name, c.Pattern)
	}
	e := Expected{Kind: c.Kind}
	if c.Kind == KindSweep || c.Kind == KindTakeover {
		e.Shard = st.Shard
	}
	switch c.Kind {
	case KindDiscovery:
		w := ps.Window
		e.Window = &w
	case KindSweep:
		w := ps.Window
		e.Window = &w
		e.Outside = pat.CleanSet()
		if w != (Window{}) {
			for _, o := range pat.Model(st.params()) {
				if !slices.Contains(e.Outside, o) {
					e.Inside = append(e.Inside, o)
				}
			}
		}
	case KindTakeover:
		// Fenced, nothing breaks; unfenced, every point of the
		// subject's takeover window lets the paused holder write or
		// send as a non-holder.
		if pat.Takeover == nil {
			return Expected{}, fmt.Errorf("condition %s: pattern %q has no takeover", c.Name, c.Pattern)
		}
		w := pat.Takeover.Window
		e.Fenced, e.Window, e.Outside = !c.Unfenced, &w, []string{OutcomeClean}
		if c.Unfenced {
			e.Inside = pat.Takeover.Damage
		}
	case KindHits, KindKill:
		e.Allowed = pat.Model(st.params())
	case KindRace:
		e.Allowed = pat.RaceAllowed(st.params(), c.Racers)
		// Under READ COMMITTED no statement of these patterns can fail
		// with 40001, and none takes two row locks, so none can deadlock:
		// a conflicting insert or upsert waits for the row's lock and then
		// sees the committed row. Under REPEATABLE READ and SERIALIZABLE
		// a racer whose snapshot missed that row fails with 40001 and runs
		// again.
		l, _ := store.RecordedIsolation(c.Isolation)
		e.NoSerialization = l == store.ReadCommitted
	default:
		return Expected{}, fmt.Errorf("condition %s: unknown kind %q", c.Name, c.Kind)
	}
	return e, nil
}

// Check is the membership check of each condition.
func (Scenario) Check(condition string, rawExp, rawObs json.RawMessage) (bool, []results.Difference, error) {
	var e Expected
	if err := json.Unmarshal(rawExp, &e); err != nil {
		return false, nil, fmt.Errorf("expected of %s: %w", condition, err)
	}
	var diffs []results.Difference
	add := func(path, exp, obs string) {
		diffs = append(diffs, results.Difference{Path: path, Expected: exp, Observed: obs})
	}
	switch e.Kind {
	case KindFile:
		if e.File == nil {
			return false, nil, fmt.Errorf("expected of %s: an article file's condition without the file's oracle", condition)
		}
		raw, err := json.Marshal(e.File)
		if err != nil {
			return false, nil, err
		}
		return pattern.Scenario{}.Check(condition, raw, rawObs)
	case KindDiscovery:
		var o deliver.DiscoveryObserved
		if err := json.Unmarshal(rawObs, &o); err != nil {
			return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
		}
		if len(o.Points) == 0 {
			add("points", "at least one point", "none")
		}
		if _, ok := e.Window.Points(o.Points); !ok {
			add("points", fmt.Sprintf("%q before %q", e.Window.From, e.Window.To), strings.Join(o.Points, ","))
		}
	case KindSweep:
		var o deliver.SweepObserved
		if err := json.Unmarshal(rawObs, &o); err != nil {
			return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
		}
		win, ok := e.Window.Points(o.Points)
		if !ok {
			add("points", fmt.Sprintf("%q before %q", e.Window.From, e.Window.To), strings.Join(o.Points, ","))
			break
		}
		outcomes := make([][2]string, len(o.Outcomes))
		for i, po := range o.Outcomes {
			outcomes[i] = [2]string{po.Point, po.Outcome}
		}
		points, win := pointShare(e.Shard, condition, o.Points, win)
		checkPoints(add, e, points, win, outcomes, o.ViolatingPoints)
	case KindTakeover:
		var o deliver.TakeoverObserved
		if err := json.Unmarshal(rawObs, &o); err != nil {
			return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
		}
		win, ok := e.Window.Points(o.Points)
		if !ok {
			add("points", fmt.Sprintf("%q before the end", e.Window.From), strings.Join(o.Points, ","))
			break
		}
		// Inside the window the paused holder writes or sends again:
		// fenced, each attempt is refused; unfenced, each lands. A shard
		// tried the points of its part.
		points, win := pointShare(e.Shard, condition, o.Points, win)
		violating, lost, refused := win, 0, 0
		if e.Fenced {
			violating = []string{}
			lost, refused = builtin.FencedTakeover(win)
		}
		outcomes := make([][2]string, len(o.Outcomes))
		for i, t := range o.Outcomes {
			outcomes[i] = [2]string{t.Point, t.Outcome}
		}
		checkPoints(add, e, points, violating, outcomes, o.ViolatingPoints)
		if o.LeaseLost != lost {
			add("lease_lost", fmt.Sprint(lost), fmt.Sprint(o.LeaseLost))
		}
		if o.StaleRefused != refused {
			add("stale_refused", fmt.Sprint(refused), fmt.Sprint(o.StaleRefused))
		}
	case KindHits:
		var o deliver.HitsObserved
		if err := json.Unmarshal(rawObs, &o); err != nil {
			return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
		}
		checkHistogram(add, "histogram", e.Allowed, o.Trials, o.Histogram)
	case KindKill, KindRace:
		var o deliver.TimingObserved
		if err := json.Unmarshal(rawObs, &o); err != nil {
			return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
		}
		checkHistogram(add, "timing.histogram", e.Allowed, o.Trials, o.Timing.Histogram)
		if e.NoSerialization && (o.Timing.SerializationErrors > 0 || o.Timing.RacerEnds[we.ClassSerialization] > 0) {
			add("timing.serialization_errors", "0 under READ COMMITTED", fmt.Sprintf("%d retried, %d racers ended on one", o.Timing.SerializationErrors, o.Timing.RacerEnds[we.ClassSerialization]))
		}
	default:
		return false, nil, fmt.Errorf("expected of %s: unknown kind %q", condition, e.Kind)
	}
	return len(diffs) == 0, diffs, nil
}

// checkHistogram passes when every outcome seen is allowed and the counts
// add up to the trials.
func checkHistogram(add func(path, exp, obs string), path string, allowed []string, trials int, h map[string]int) {
	total := 0
	for _, o := range slices.Sorted(maps.Keys(h)) {
		total += h[o]
		if !slices.Contains(allowed, o) {
			add(path+"."+o, "one of "+setString(allowed), fmt.Sprintf("%d trials", h[o]))
		}
	}
	if total != trials {
		add(path, fmt.Sprintf("%d trials in all", trials), fmt.Sprintf("%d", total))
	}
}

// checkPoints is the per-point membership check the sweep and the takeover
// share: one outcome per point, in e.Inside at the violating points and in
// e.Outside elsewhere, and the violating points exactly as predicted.
// outcomes are (point, outcome) pairs in the observed order.
func checkPoints(add func(path, exp, obs string), e Expected, points, violating []string, outcomes [][2]string, observedViolating []string) {
	if len(outcomes) != len(points) {
		add("outcomes", fmt.Sprintf("%d (one per point)", len(points)), fmt.Sprint(len(outcomes)))
	}
	for i, po := range outcomes {
		allowed := e.Outside
		if slices.Contains(violating, po[0]) {
			allowed = e.Inside
		}
		if !slices.Contains(allowed, po[1]) {
			add(fmt.Sprintf("outcomes[%d].outcome", i), "one of "+setString(allowed), po[1])
		}
	}
	if !slices.Equal(violating, observedViolating) {
		add("violating_points", setString(violating), setString(observedViolating))
	}
}

// pointShare keeps the points, and the violating points among them, whose
// trials the shard runs; without a shard, all of them.
func pointShare(part *shard.Part, condition string, points, violating []string) (mine, mineViolating []string) {
	if part == nil {
		return points, violating
	}
	mine, mineViolating = []string{}, []string{}
	ts, _ := engine.Plan(context.Background(), 0, part, []engine.Set{{Class: engine.Points, Condition: condition}}, engine.Found{Points: points})
	for _, t := range ts {
		mine = append(mine, t.Point)
		if slices.Contains(violating, t.Point) {
			mineViolating = append(mineViolating, t.Point)
		}
	}
	return mine, mineViolating
}

func setString(xs []string) string { return "{" + strings.Join(xs, ", ") + "}" }
