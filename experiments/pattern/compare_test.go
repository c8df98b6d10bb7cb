package pattern

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
	"idemlab/worker/store"
)

// TestCompare: each condition says its trials from the extra table, with
// "expected" where the file's known_unsafe covers the class on the run's
// backend and level; a power condition stands in the pattern's power row
// under its setting, the others in their own.
func TestCompare(t *testing.T) {
	file := wp.File{Name: "p", KnownUnsafe: []string{"points", "concurrent@postgres/read-committed", "power:WAL/NORMAL"}}
	conds := []Condition{
		{Name: "p/none", Pattern: "p", Fault: FaultNone},
		{Name: "p/points", Pattern: "p", Fault: wp.FaultPoints},
		{Name: "p/concurrent", Pattern: "p", Fault: wp.FaultConcurrent},
		{Name: "p/power:WAL/NORMAL", Pattern: "p", Fault: wp.FaultPower, Power: "WAL/NORMAL"},
		{Name: "p/power:DELETE/FULL", Pattern: "p", Fault: wp.FaultPower, Power: "DELETE/FULL"},
	}
	extra := Extra{Patterns: []PatternExtra{{Name: "p", Conditions: []ConditionExtra{
		{Name: "p/none", Trials: 1},
		{Name: "p/points", Trials: 14, Violating: 6, Broken: map[string]int{"one job": 6}},
		{Name: "p/concurrent", Trials: 6, Violating: 2, Broken: map[string]int{"one job": 2, "processed": 1}, Failed: map[string]int{"constraint": 3}},
		{Name: "p/power:WAL/NORMAL", Trials: 15},
		{Name: "p/power:DELETE/FULL", Trials: 15, Violating: 1, Broken: map[string]int{"processed": 1}},
	}}}}
	sqlite := Settings{EventID: "e", Patterns: []Pattern{{Source: "p.json", File: file}}, Conditions: conds}
	pg := sqlite
	pg.Backend, pg.Postgres = store.BackendPostgres, &store.PGRequested{Isolation: store.ReadCommitted.SQL(), SynchronousCommit: "on"}
	pg.Conditions = conds[:3]
	for _, tc := range []struct {
		name  string
		st    Settings
		words map[string]string
	}{
		{"sqlite", sqlite, map[string]string{
			"p/none":              "held 1/1 trials",
			"p/points":            "broke 6/14 trials (expected): one job ×6",
			"p/concurrent":        "broke 2/6 trials: one job ×2, processed ×1; failed deliveries: constraint ×3",
			"p/power:WAL/NORMAL":  "held 15/15 trials (expected to break)",
			"p/power:DELETE/FULL": "broke 1/15 trials: processed ×1",
		}},
		{"postgres read committed", pg, map[string]string{
			"p/none":       "held 1/1 trials",
			"p/points":     "broke 6/14 trials (expected): one job ×6",
			"p/concurrent": "broke 2/6 trials (expected): one job ×2, processed ×1; failed deliveries: constraint ×3",
		}},
	} {
		got := comparedOf(t, tc.st, extra)
		if diff := cmp.Diff(tc.words, got.Outcomes); diff != "" {
			t.Errorf("%s: outcomes (-want +got):\n%s", tc.name, diff)
		}
		for name := range tc.words {
			want := scenario.Row{Key: name}
			if c := conds[slices.IndexFunc(conds, func(c Condition) bool { return c.Name == name })]; c.Fault == wp.FaultPower {
				want = scenario.Row{Key: "p/power", Setting: c.Power}
			}
			if r := got.RowOf(name); r != want {
				t.Errorf("%s: %s in row %+v, want %+v", tc.name, name, r, want)
			}
		}
	}
}

// comparedOf runs the registered scenario's Compare over the settings'
// conditions, all passed, with extra as the derived table.
func comparedOf(tb testing.TB, st Settings, extra Extra) scenario.Compared {
	tb.Helper()
	raw := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	res := results.ScenarioResult{Name: Name, Settings: raw(st), Extra: raw(extra)}
	for _, c := range st.Conditions {
		res.Conditions = append(res.Conditions, results.ConditionResult{Name: c.Name, Pass: true, Observed: raw(Verdict{})})
	}
	got, err := New().Compare(res)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}
