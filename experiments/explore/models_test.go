package explore

import (
	"encoding/json"
	"idemlab/experiments/subject/deliver"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenariotest"
	"idemlab/experiments/subject/builtin"
)

// TestModelsMatchARun runs each built-in subject's discovery and sweep
// with real processes, for more than one item, and holds the subjects'
// models to what was recorded: the points each model gives (which
// Processes counts with) are the ones its worker's discovery passed; the
// processes the model counts for a trial crashed at each point
// (Subject.ProcessesAt, from the state the model says the crash leaves
// and the recovery planned from it) are the ones the trial ran; and the
// journal the batch journal's model leaves at each point is the one the
// crashed worker left.
func TestModelsMatchARun(t *testing.T) {
	st := NewSettings(Input{EventID: "e-1", JobKey: "k-1", Seed: 5, Parallel: 2, MaxAttempts: 3, Items: 3}, -1)
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c Condition) bool { return c.Kind != KindDiscovery && c.Kind != KindSweep })
	out := scenariotest.RunPlan(t, New(sourceArticles(t)), &plan{s: st}, nil, nil)
	for _, ps := range st.Patterns {
		pat, _ := LookupPattern(ps.Name)
		i := slices.IndexFunc(out.Result.Conditions, func(c results.ConditionResult) bool { return c.Name == ps.Name+"/"+KindDiscovery })
		if i < 0 {
			t.Fatalf("no discovery of %s", ps.Name)
		}
		var d deliver.DiscoveryObserved
		if err := json.Unmarshal(out.Result.Conditions[i].Observed, &d); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pat.Points(st.params()), d.Points); diff != "" {
			t.Errorf("%s: points (-model +discovered):\n%s", ps.Name, diff)
		}
	}
	model, ran := map[string]int{}, map[string]int{}
	journals, left := map[string][]string{}, map[string][]string{}
	type trial struct {
		cond string
		i    int
	}
	point := map[trial]string{}
	var sweeps []Observation
	for _, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if c, ok := strings.CutSuffix(o.Condition, "/"+KindSweep); ok {
			sweeps = append(sweeps, o)
			if o.Step == StepDelivery {
				point[trial{o.Condition, o.Trial}] = o.Point
				pat, _ := LookupPattern(c)
				model[o.Condition+"@"+o.Point] = pat.ProcessesAt(st.params(), o.Point)
				if pat.Crashed != nil {
					journals[o.Condition+"@"+o.Point] = statusOnly(pat.Crashed(st.params(), o.Point)[builtin.TableJournal])
					left[o.Condition+"@"+o.Point] = statusOnly(o.Rows[builtin.TableJournal])
				}
			}
		}
	}
	if len(model) == 0 {
		t.Fatal("no sweep trial was recorded")
	}
	for _, o := range sweeps {
		ran[o.Condition+"@"+point[trial{o.Condition, o.Trial}]] += len(o.ProcessIDs)
	}
	if diff := cmp.Diff(model, ran); diff != "" {
		t.Errorf("processes of each sweep trial (-model +ran):\n%s", diff)
	}
	if diff := cmp.Diff(journals, left); diff != "" {
		t.Errorf("journal after each crash (-model +recorded):\n%s", diff)
	}
}

// statusOnly is journal rows without their receipts, which the model does
// not know, in order.
func statusOnly(rows []string) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r[:strings.LastIndex(r, "|")])
	}
	slices.Sort(out)
	return out
}
