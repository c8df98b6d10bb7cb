package batch

import (
	"encoding/json"
	"fmt"
	"slices"

	"idemlab/experiments/figure"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// charts draws the duplicates per condition and mode, and the journal's
// resume time per trial against its floor.
func charts(res results.ScenarioResult, st Settings, ex Extra) ([]scenario.Chart, error) {
	var out []scenario.Chart
	dup := figure.BarChart{
		Title: "duplicate sends at the receiver", YLabel: "duplicates", XLabel: "condition",
		ExpectedName: "expected (oracle)", Categories: append([]string{}, Conditions...),
	}
	for _, m := range st.Modes {
		s := figure.Series{Name: m}
		for _, cond := range Conditions {
			v, e := figure.Missing(), figure.Missing()
			for _, c := range res.Conditions {
				if c.Name != ConditionName(m, cond) {
					continue
				}
				var obs, exp []Outcome
				if err := json.Unmarshal(c.Observed, &obs); err != nil {
					return nil, fmt.Errorf("condition %s observed: %w", c.Name, err)
				}
				json.Unmarshal(c.Expected, &exp)
				if len(obs) > 0 {
					v = float64(slices.MaxFunc(obs, func(a, b Outcome) int { return a.Duplicates - b.Duplicates }).Duplicates)
				}
				if len(exp) > 0 {
					e = float64(exp[0].Duplicates)
				}
			}
			s.Values, s.Expected = append(s.Values, v), append(s.Expected, e)
		}
		dup.Series = append(dup.Series, s)
	}
	svg, err := dup.SVG()
	if err != nil {
		return nil, err
	}
	out = append(out, scenario.Chart{
		Title: "Duplicate sends per condition", Slug: "batch-duplicates", SVG: svg,
		Caption: "The most duplicates any trial left at the receiver (accepts beyond the first per item and step), per failure mode; markers are the oracle's expectation. The journal conditions stay at zero.",
	})
	for _, m := range st.Modes {
		lc := figure.LineChart{Title: "resume time per trial, " + m, XLabel: "trial", YLabel: "ms in the worker"}
		for _, cond := range []string{CondJournal, CondHardCrash, CondRerunAll} {
			name := ConditionName(m, cond)
			s := figure.XYSeries{Name: cond}
			var floor float64
			for _, t := range ex.Trials {
				if t.Condition == name {
					s.X, s.Y = append(s.X, float64(t.Trial)), append(s.Y, t.MS)
					floor = t.FloorMS
				}
			}
			if len(s.X) == 0 {
				continue
			}
			lc.Series = append(lc.Series, s)
			lc.References = append(lc.References, figure.Reference{Name: cond + " floor", Y: floor, Series: cond})
		}
		svg, err := lc.SVG()
		if err != nil {
			return nil, err
		}
		out = append(out, scenario.Chart{
			Title: "Resume time, " + m, Slug: "batch-timings-" + m, SVG: svg,
			Caption: "The batch loop timed inside the worker, summed over the runs after run 1, per trial; dashed lines are each condition's simulated-latency floor.",
		})
	}
	return out, nil
}
