package explore

import (
	"idemlab/experiments/subject/deliver"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/builtin"
)

// compareInput is a small exploration: one racer count, two rounds.
func compareInput() Input {
	return Input{EventID: "e", JobKey: "j", Seed: 1, Trials: 2, Racers: []int{2}, Rounds: 2, Parallel: 1, MaxAttempts: 3, Items: 1}
}

// comparedOf runs the registered scenario's Compare, as the report does,
// over hand-made observed figures by condition name.
func comparedOf(tb testing.TB, st Settings, observed map[string]any) scenario.Compared {
	tb.Helper()
	res := results.ScenarioResult{Name: Name, Settings: mustJSON(tb, st)}
	for _, c := range st.Conditions {
		if o, ok := observed[c.Name]; ok {
			res.Conditions = append(res.Conditions, results.ConditionResult{Name: c.Name, Pass: true, Observed: mustJSON(tb, o)})
		}
	}
	got, err := New(sourceArticles(tb)).Compare(res)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

func race(trials, serialization int, hist map[string]int) deliver.TimingObserved {
	return deliver.TimingObserved{Trials: trials, Timing: deliver.TimingFigures{Histogram: hist, SerializationErrors: serialization}}
}

// TestCompareLinesUpRaces: a SQLite race and the PostgreSQL races of the
// same pattern and racer count share one row, each level its setting,
// and the words say the outcomes per round and the retries.
func TestCompareLinesUpRaces(t *testing.T) {
	sq := newSettings(compareInput(), -1, Patterns())
	pg := postgresSettings(sq, backend.Spec{Name: "postgres", SynchronousCommit: "off"}, []string{"read-committed", "serializable"})
	gotSQ := comparedOf(t, sq, map[string]any{
		"separate-commit/timing-race-2":      race(2, 0, map[string]int{OutcomeClean: 2}),
		"separate-commit/timing-race-2-kill": deliver.TimingObserved{Trials: 2, Timing: deliver.TimingFigures{Histogram: map[string]int{builtin.Duplicate(2): 1, OutcomeClean: 1}, Kills: 2, Landed: 1}},
	})
	gotPG := comparedOf(t, pg, map[string]any{
		"separate-commit/read-committed/timing-race-2": race(2, 0, map[string]int{builtin.Duplicate(2): 2}),
		"separate-commit/serializable/timing-race-2":   race(2, 17, map[string]int{OutcomeClean: 1, builtin.Duplicate(2): 1}),
	})
	row := "separate-commit/timing-race-2"
	for _, tc := range []struct {
		got  scenario.Compared
		cond string
		want scenario.Row
		says string
	}{
		{gotSQ, "separate-commit/timing-race-2", scenario.Row{Key: row}, "clean in 2/2 rounds"},
		{gotSQ, "separate-commit/timing-race-2-kill", scenario.Row{Key: row + "-kill"}, "clean in 1/2, duplicate-2 in 1/2 rounds, 1/2 kills landed"},
		{gotPG, "separate-commit/read-committed/timing-race-2", scenario.Row{Key: row, Setting: "read-committed"}, "duplicate-2 in 2/2 rounds"},
		{gotPG, "separate-commit/serializable/timing-race-2", scenario.Row{Key: row, Setting: "serializable"}, "clean in 1/2, duplicate-2 in 1/2 rounds, 17 40001/40P01 retries"},
	} {
		if r := tc.got.RowOf(tc.cond); r != tc.want {
			t.Errorf("%s: row %+v, want %+v", tc.cond, r, tc.want)
		}
		if w := tc.got.Outcomes[tc.cond]; w != tc.says {
			t.Errorf("%s: %q, want %q", tc.cond, w, tc.says)
		}
	}
	if want := "SQLite journal_mode=" + sq.SQLite.JournalMode + " synchronous=" + sq.SQLite.Synchronous; gotSQ.Database != want {
		t.Errorf("SQLite database %q, want %q", gotSQ.Database, want)
	}
	if want := "PostgreSQL, synchronous_commit=off, the isolation level per condition (read-committed, serializable), as every session read them back"; gotPG.Database != want {
		t.Errorf("PostgreSQL database %q, want %q", gotPG.Database, want)
	}
}

// TestCompareWordsPerKind: each kind of condition is said from its own
// observed figure.
func TestCompareWordsPerKind(t *testing.T) {
	sq := newSettings(compareInput(), -1, Patterns())
	points := []string{"a", "b", "c"}
	got := comparedOf(t, sq, map[string]any{
		"separate-commit/discovery": deliver.DiscoveryObserved{Points: points},
		"separate-commit/sweep": deliver.SweepObserved{Points: points, ViolatingPoints: []string{"b"}, Outcomes: []deliver.PointOutcome{
			{Point: "a", Outcome: OutcomeClean}, {Point: "b", Outcome: builtin.Duplicate(2), Violations: []string{"one-job"}}, {Point: "c", Outcome: OutcomeClean}}},
		"single-transaction/sweep":            deliver.SweepObserved{Points: points, ViolatingPoints: []string{}},
		"separate-commit/crash-after-hits":    deliver.HitsObserved{Trials: 1, Histogram: map[string]int{OutcomeClean: 1}},
		"separate-commit/timing-kill":         deliver.TimingObserved{Trials: 1, Timing: deliver.TimingFigures{Histogram: map[string]int{OutcomeClean: 1}, Kills: 1, Landed: 1}},
		"separate-commit/timing-race-2":       race(0, 0, map[string]int{}),
		"lease-batch/takeover-unfenced":       deliver.TakeoverObserved{Points: points, ViolatingPoints: []string{"c", "b"}, LeaseLost: 1, StaleRefused: 2},
		"single-transaction/crash-after-hits": deliver.HitsObserved{Trials: 10, Histogram: map[string]int{builtin.Duplicate(10): 1, builtin.Duplicate(9): 2, OutcomeClean: 7}},
	})
	want := map[string]string{
		"separate-commit/discovery":           "passed 3 points",
		"separate-commit/sweep":               "broke at 1/3 points, first b (duplicate-2)",
		"single-transaction/sweep":            "held at 3/3 points",
		"separate-commit/crash-after-hits":    "clean in 1/1 trials",
		"separate-commit/timing-kill":         "clean in 1/1 trials, 1/1 kills landed",
		"separate-commit/timing-race-2":       "no rounds",
		"lease-batch/takeover-unfenced":       "broke at 2/3 points, first c; 1 leases lost, 2 stale sends refused",
		"single-transaction/crash-after-hits": "clean in 7/10, duplicate-9 in 2/10, duplicate-10 in 1/10 trials",
	}
	if diff := cmp.Diff(want, got.Outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for name := range want {
		if r := got.RowOf(name); r.Key != name || r.Setting != "" {
			t.Errorf("%s on SQLite: row %+v, want its own name and no setting", name, r)
		}
	}
}
