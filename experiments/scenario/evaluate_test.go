package scenario_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// fake is a scenario whose oracle expects one count per condition and
// whose fold counts observation lines per condition.
type fake struct{ want map[string]int }

func (fake) Name() string                                                        { return "fake" }
func (fake) Summary() string                                                     { return "" }
func (fake) Flags() []scenario.Flag                                              { return []scenario.Flag{{Name: "n"}} }
func (fake) Caps() scenario.Caps                                                 { return scenario.Caps{} }
func (f fake) Plan(context.Context, scenario.PlanRequest) (scenario.Plan, error) { return nil, nil }
func (f fake) Expect(json.RawMessage) ([]scenario.Expected, error) {
	return []scenario.Expected{{Condition: "a", Value: f.want["a"]}, {Condition: "b", Value: f.want["b"]}}, nil
}
func (fake) Fold(_ json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	out := scenario.Folded{Observed: map[string]any{}}
	for _, l := range rec.Observations {
		n, _ := out.Observed[l.Condition].(int)
		out.Observed[l.Condition] = n + 1
	}
	return out, nil
}
func (fake) Report(results.ScenarioResult) (scenario.Section, error) { return scenario.Section{}, nil }
func (fake) Check(_ string, e, o json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(e, o)
}
func (fake) Explain(results.ConditionResult) []scenario.Explained { return nil }
func (fake) Compare(results.ScenarioResult) (scenario.Compared, error) {
	return scenario.Compared{}, nil
}

func lines(conds ...string) results.Records {
	var obs []results.Line
	for i, c := range conds {
		obs = append(obs, results.Line{N: i + 1, Scenario: "fake", Condition: c, Raw: json.RawMessage(`{}`)})
	}
	return results.NewRecords(obs, nil)
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name     string
		rec      results.Records
		pass     []bool
		diffs    []results.Difference
		findings []string
	}{
		{"both met", lines("a", "b", "b"), []bool{true, true}, nil, nil},
		{"one missed", lines("a", "b"), []bool{true, false}, []results.Difference{{Path: ".", Expected: "2", Observed: "1"}}, nil},
		{"one never observed", lines("a"), []bool{true, false}, nil, []string{"condition b: no observation"}},
		{"an unknown condition", lines("a", "b", "b", "c"), []bool{true, true}, nil, []string{"condition c: observed, but the settings give no such condition"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := scenario.Evaluate(fake{want: map[string]int{"a": 1, "b": 2}}, nil, json.RawMessage(`{}`), tt.rec)
			findings := res.AllFindings()
			var pass []bool
			var diffs []results.Difference
			for _, c := range res.Conditions {
				pass = append(pass, c.Pass)
				diffs = append(diffs, c.Differences...)
			}
			if d := cmp.Diff(tt.pass, pass); d != "" {
				t.Errorf("pass (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.diffs, diffs); d != "" {
				t.Errorf("differences (-want +got):\n%s", d)
			}
			// A scenario passes when every condition does and no finding
			// is left over for the scenario as a whole.
			if want := !strings.Contains(cmp.Diff(tt.pass, []bool{true, true}), "-") && len(res.Findings) == 0; res.Pass != want {
				t.Errorf("scenario pass %v, want %v (conditions %v, scenario findings %d)", res.Pass, want, pass, len(res.Findings))
			}
			var got []string
			for _, f := range findings {
				got = append(got, f.Field+": "+f.Message)
			}
			if len(got) != len(tt.findings) {
				t.Fatalf("findings %q, want %q", got, tt.findings)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.findings[i]) {
					t.Errorf("finding %q, want %q", got[i], tt.findings[i])
				}
			}
		})
	}
}

func TestIntFlag(t *testing.T) {
	tests := []struct {
		v    string
		want string
	}{
		{"3", ""}, {"0", "--n 0: want 1 to 5"}, {"x", `--n "x": want a whole number`}, {"6", "--n 6: want 1 to 5"},
	}
	for _, tt := range tests {
		_, ok, err := scenario.IntFlag(map[string]string{"n": tt.v}, "n", 1, 5)
		if !ok || (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("IntFlag(%q) = %v, %v; want %q", tt.v, ok, err, tt.want)
		}
	}
	if _, ok, _ := scenario.IntFlag(nil, "n", 1, 5); ok {
		t.Error("an absent flag reads as given")
	}
}
