package explore

import (
	"idemlab/experiments/subject/deliver"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// cleanObserved is a condition's observed figures with every trial clean:
// two points for a sweep or takeover, one trial otherwise.
func cleanObserved(c Condition) any {
	pts := []string{"p1", "p2"}
	switch c.Kind {
	case KindDiscovery:
		return deliver.DiscoveryObserved{Points: pts}
	case KindSweep:
		return deliver.SweepObserved{Points: pts, Outcomes: []deliver.PointOutcome{{Point: "p1", Outcome: OutcomeClean}, {Point: "p2", Outcome: OutcomeClean}}, ViolatingPoints: []string{}}
	case KindHits:
		return deliver.HitsObserved{Trials: 1, Histogram: map[string]int{OutcomeClean: 1}}
	case KindTakeover:
		return deliver.TakeoverObserved{Fenced: !c.Unfenced, Points: pts, Outcomes: []deliver.TakeoverTrial{{Point: "p1", Outcome: OutcomeClean}, {Point: "p2", Outcome: OutcomeClean}}, ViolatingPoints: []string{}}
	}
	return deliver.TimingObserved{Trials: 1, Timing: deliver.TimingFigures{Histogram: map[string]int{OutcomeClean: 1}}}
}

// TestLead derives the sentences from a result made by hand: separate
// commits duplicate in the sweep and a seeded crash, the unfenced takeover
// breaks the lease's invariants, one condition misses its oracle.
func TestLead(t *testing.T) {
	st := newSettings(Input{EventID: "e", JobKey: "k", Trials: 2, Racers: []int{2}, Rounds: 1, Parallel: 1, MaxAttempts: 1, Items: 1}, -1, Patterns())
	obs := map[string]any{}
	for _, c := range st.Conditions {
		obs[c.Name] = cleanObserved(c)
	}
	obs["separate-commit/sweep"] = deliver.SweepObserved{Points: []string{"p1", "p2"}, ViolatingPoints: []string{"p2"},
		Outcomes: []deliver.PointOutcome{{Point: "p1", Outcome: OutcomeClean}, {Point: "p2", Outcome: "duplicate-2", Violations: []string{"one-job"}}}}
	obs["separate-commit/crash-after-hits"] = deliver.HitsObserved{Trials: 1, ViolatingTrials: 1, Histogram: map[string]int{"duplicate-2": 1}}
	obs["lease-batch/takeover-unfenced"] = deliver.TakeoverObserved{Points: []string{"p1", "p2"}, ViolatingPoints: []string{"p1", "p2"}}
	extra := Extra{Tables: deliver.Tables{Violations: []deliver.ViolationRecord{
		{Condition: "separate-commit/sweep", Pattern: "separate-commit", Invariant: "one-job"},
		{Condition: "lease-batch/takeover-unfenced", Pattern: "lease-batch", Invariant: "no-stale-accept"},
		{Condition: "lease-batch/takeover-unfenced", Pattern: "lease-batch", Invariant: "no-stale-journal-write"},
	}}}
	res := results.ScenarioResult{Name: Name}
	for _, c := range st.Conditions {
		e, err := ExpectCondition(st, c)
		if err != nil {
			t.Fatal(err)
		}
		res.Conditions = append(res.Conditions, results.ConditionResult{Name: c.Name, Pass: c.Name != "single-transaction/crash-after-hits", Expected: scenario.Marshal(e), Observed: scenario.Marshal(obs[c.Name])})
	}
	got, err := Lead(st, res, extra)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range got {
		texts = append(texts, s.Text)
	}
	want := []string{
		"1 of the 26 conditions ended outside the oracle's allowed outcomes: single-transaction/crash-after-hits.",
		"separate-commit breaks one-job: a crash at p2, ending duplicate-2; 1 of 1 crash at a seeded hit; its 3 other conditions broke nothing.",
		"lease-batch breaks no-stale-accept, no-stale-journal-write: a holder paused at p1, p2, its lease taken over, with the fence off; its 3 other conditions broke nothing.",
		"single-transaction, batch-journal, batch-rerun-all and claim-ttl break no invariant in any trial: 8 crashes at each discovered point, 4 crashes at a seeded hit, 1 kill after a seeded delay, 2 race rounds.",
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"separate-commit/sweep", "separate-commit/crash-after-hits"}, got[1].Cells); diff != "" {
		t.Errorf("cells of the separate-commit sentence (-want +got):\n%s", diff)
	}
}
