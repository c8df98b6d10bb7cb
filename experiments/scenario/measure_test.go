package scenario_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// timedObserved is one condition of the timed scenario: MS is declared a
// measurement, Plain is a float64 like any other.
type timedObserved struct {
	MS    float64 `json:"ms" idemlab:"measure"`
	Plain float64 `json:"plain"`
}

type timedExtra struct {
	TotalMS float64 `json:"total_ms" idemlab:"measure"`
	Lines   int     `json:"lines"`
}

// timed folds each observation line {"ms": …, "plain": …} into its
// condition, and passes every condition: only the measurements matter
// here.
type timed struct{ fake }

func (timed) Fold(_ json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	out := scenario.Folded{Observed: map[string]any{}}
	var ex timedExtra
	for _, l := range rec.Observations {
		var o timedObserved
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			panic(err)
		}
		out.Observed[l.Condition] = o
		ex.TotalMS += o.MS
		ex.Lines++
	}
	out.Extra = ex
	return out, nil
}

func (timed) Check(string, json.RawMessage, json.RawMessage) (bool, []results.Difference, error) {
	return true, nil, nil
}

// timedLines gives one observation line per raw value, for conditions a,
// b, a, b, … in turn.
func timedLines(raws ...string) results.Records {
	var obs []results.Line
	for i, r := range raws {
		obs = append(obs, results.Line{N: i + 1, Scenario: "fake", Condition: string(rune('a' + i%2)), Raw: json.RawMessage(r)})
	}
	return results.NewRecords(obs, nil)
}

// TestReplayable: two runs that differ only in fields declared
// measurements give the same replayable result; a difference in an
// undeclared float64 is still there to see, at its own path.
func TestReplayable(t *testing.T) {
	s := timed{}
	recorded := timedLines(`{"ms":10.5,"plain":1}`, `{"ms":3,"plain":2}`)
	for _, tt := range []struct {
		name  string
		rerun results.Records
		want  []string
	}{
		{"only measurements differ", timedLines(`{"ms":99,"plain":1}`, `{"ms":0.25,"plain":2}`), nil},
		{"a plain float64 differs", timedLines(`{"ms":10.5,"plain":1.5}`, `{"ms":3,"plain":2}`), []string{"x.conditions[0].observed.plain: 1 / 1.5"}},
		{"an untagged count in the extra table differs", timedLines(`{"ms":1,"plain":1}`, `{"ms":3,"plain":2}`, `{"ms":2,"plain":1}`), []string{"x.extra.lines: 2 / 3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			settings := json.RawMessage(`{}`)
			a := scenario.Evaluate(s, nil, settings, recorded)
			b := scenario.Evaluate(s, nil, settings, tt.rerun)
			m := scenario.Measurements(s, settings, recorded)
			m.Union(scenario.Measurements(s, settings, tt.rerun))
			var got []string
			for _, d := range results.DiffPaths("x", scenario.Replayable(a, m), scenario.Replayable(b, m)) {
				got = append(got, d.Path+": "+d.A+" / "+d.B)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("differences (-want +got):\n%s", d)
			}
			if len(results.DiffPaths("x", a, b)) == 0 && tt.name == "only measurements differ" {
				t.Errorf("the full results are equal too, so the test shows nothing")
			}
		})
	}
}

// TestMeasurementsPaths: the paths left out are the tagged fields, per
// condition and in the extra table, and nothing else.
func TestMeasurementsPaths(t *testing.T) {
	m := scenario.Measurements(timed{}, json.RawMessage(`{}`), timedLines(`{"ms":1,"plain":1}`, `{"ms":2,"plain":2}`))
	want := []string{"extra.total_ms", "observed.a.ms", "observed.b.ms"}
	if d := cmp.Diff(want, m.Paths()); d != "" {
		t.Errorf("paths (-want +got):\n%s", d)
	}
}
