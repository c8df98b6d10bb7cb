package explore

import (
	"idemlab/experiments/seed"
	"idemlab/experiments/subject/deliver"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSchedule checks that a trial's draw depends only on its seed,
// condition and index, and stays in range.
func TestSchedule(t *testing.T) {
	for i := range 200 {
		k := seed.CrashK(7, "a/crash-after-hits", i, 3)
		if k < 1 || k > 3 || k != seed.CrashK(7, "a/crash-after-hits", i, 3) {
			t.Fatalf("trial %d: k %d out of 1..3 or not repeatable", i, k)
		}
		d := seed.KillDelayUS(7, "a/timing-kill", i, 1000)
		if d < 1 || d > 1000 || d != seed.KillDelayUS(7, "a/timing-kill", i, 1000) {
			t.Fatalf("trial %d: delay %d out of 1..1000 or not repeatable", i, d)
		}
	}
	same := 0
	for i := range 100 {
		if seed.CrashK(7, "a", i, 1000) == seed.CrashK(8, "a", i, 1000) {
			same++
		}
	}
	if same > 5 {
		t.Errorf("seeds 7 and 8 agree on %d of 100 draws", same)
	}
	ks := seed.RaceKillsUS(1, "a/timing-race-8-kill", 0, 8, 1000)
	if diff := cmp.Diff(ks, seed.RaceKillsUS(1, "a/timing-race-8-kill", 0, 8, 1000)); diff != "" || len(ks) != 8 {
		t.Errorf("race kills not repeatable: %s", diff)
	}
}

// TestWindowAndCheck: the sweep passes only when the violating points are
// exactly the window's, and outcome sets are checked by membership.
func TestWindowAndCheck(t *testing.T) {
	pts := []string{"a", "b", "c", "d"}
	if got, ok := (Window{From: "b", To: "d"}).Points(pts); !ok || !cmp.Equal(got, []string{"b", "c"}) {
		t.Errorf("window b..d = %v %v", got, ok)
	}
	if _, ok := (Window{From: "d", To: "b"}).Points(pts); ok {
		t.Error("a reversed window is accepted")
	}
	exp := Expected{Kind: KindSweep, Window: &Window{From: "b", To: "d"}, Inside: []string{"duplicate-2"}, Outside: []string{OutcomeClean}}
	obs := deliver.SweepObserved{Points: pts, ViolatingPoints: []string{"b", "c"}, Outcomes: []deliver.PointOutcome{
		{Point: "a", Outcome: OutcomeClean, Violations: nil}, {Point: "b", Outcome: "duplicate-2", Violations: []string{"one-job"}}, {Point: "c", Outcome: "duplicate-2", Violations: []string{"one-job"}}, {Point: "d", Outcome: OutcomeClean, Violations: nil}}}
	tests := []struct {
		name string
		edit func(o *deliver.SweepObserved)
		pass bool
	}{
		{"exact window", func(*deliver.SweepObserved) {}, true},
		{"a violation outside the window", func(o *deliver.SweepObserved) { o.ViolatingPoints = []string{"a", "b", "c"} }, false},
		{"a window point that did not violate", func(o *deliver.SweepObserved) { o.ViolatingPoints = []string{"b"} }, false},
		{"an outcome outside the set", func(o *deliver.SweepObserved) { o.Outcomes[3].Outcome = "duplicate-2" }, false},
	}
	for _, tt := range tests {
		o := obs
		o.Outcomes = append([]deliver.PointOutcome{}, obs.Outcomes...)
		tt.edit(&o)
		pass, diffs, err := Scenario{}.Check("x/sweep", mustJSON(t, exp), mustJSON(t, o))
		if err != nil || pass != tt.pass {
			t.Errorf("%s: pass %v (%v), want %v; %+v", tt.name, pass, err, tt.pass, diffs)
		}
	}
	hits := Expected{Kind: KindHits, Allowed: []string{OutcomeClean, "duplicate-2"}}
	for _, tt := range []struct {
		h    map[string]int
		n    int
		pass bool
	}{{map[string]int{OutcomeClean: 3, "duplicate-2": 1}, 4, true}, {map[string]int{"duplicate-3": 1}, 1, false}, {map[string]int{OutcomeClean: 3}, 4, false}} {
		pass, _, err := Scenario{}.Check("x/crash-after-hits", mustJSON(t, hits), mustJSON(t, deliver.HitsObserved{Trials: tt.n, Histogram: tt.h}))
		if err != nil || pass != tt.pass {
			t.Errorf("histogram %v of %d: pass %v (%v), want %v", tt.h, tt.n, pass, err, tt.pass)
		}
	}
}

// TestOracle: the allowed sets come from redelivery's model.
func TestOracle(t *testing.T) {
	st := newSettings(Input{EventID: "e", JobKey: "k", Trials: 2, Racers: []int{3}, Rounds: 1, Parallel: 1, MaxAttempts: 1}, -1, Patterns())
	got := map[string]Expected{}
	for _, c := range st.Conditions {
		e, err := ExpectCondition(st, c)
		if err != nil {
			t.Fatal(err)
		}
		got[c.Name] = e
	}
	want := map[string][]string{
		"separate-commit/crash-after-hits":      {OutcomeClean, "duplicate-2"},
		"separate-commit/timing-kill":           {OutcomeClean, "duplicate-2"},
		"separate-commit/timing-race-3":         {OutcomeClean, "duplicate-2", "duplicate-3"},
		"single-transaction/crash-after-hits":   {OutcomeClean},
		"single-transaction/timing-race-3-kill": {OutcomeClean},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, got[name].Allowed); diff != "" {
			t.Errorf("%s allowed (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff([]string{"duplicate-2"}, got["separate-commit/sweep"].Inside); diff != "" {
		t.Errorf("separate-commit sweep inside (-want +got):\n%s", diff)
	}
	if got["single-transaction/sweep"].Inside != nil || *got["single-transaction/sweep"].Window != (Window{}) {
		t.Errorf("single-transaction sweep has a window: %+v", got["single-transaction/sweep"])
	}
}
