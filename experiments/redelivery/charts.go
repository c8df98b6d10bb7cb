package redelivery

import (
	"encoding/json"
	"fmt"

	"idemlab/experiments/figure"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// jobsChart draws the follow-up jobs after each delivery, observed as bars
// and the oracle's expectation as markers: the second job after the
// redelivery is the duplicate the separate commits allow.
func jobsChart(res results.ScenarioResult) ([]scenario.Chart, error) {
	c := figure.BarChart{
		Title: "follow_up_jobs rows after each delivery", YLabel: "rows", XLabel: "condition",
		ExpectedName: "expected (oracle)",
	}
	series := make([]figure.Series, Deliveries)
	for d := range series {
		series[d].Name = fmt.Sprintf("after delivery %d", d+1)
	}
	for _, cond := range res.Conditions {
		var exp, obs []Delivery
		if err := json.Unmarshal(cond.Observed, &obs); err != nil {
			return nil, fmt.Errorf("condition %s observed: %w", cond.Name, err)
		}
		json.Unmarshal(cond.Expected, &exp)
		c.Categories = append(c.Categories, cond.Name)
		for d := range series {
			series[d].Values = append(series[d].Values, jobs(obs, d))
			series[d].Expected = append(series[d].Expected, jobs(exp, d))
		}
	}
	c.Series = series
	svg, err := c.SVG()
	if err != nil {
		return nil, err
	}
	return []scenario.Chart{{
		Title: "Follow-up jobs after each delivery", Slug: "redelivery-jobs", SVG: svg,
		Caption: "Bars are the rows the parent read from the SQLite file after each delivery; markers are the oracle's expectation. A second job after the redelivery is the duplicate the separate-commit pattern allows.",
	}}, nil
}

func jobs(ds []Delivery, i int) float64 {
	if i >= len(ds) {
		return figure.Missing()
	}
	return float64(ds[i].FollowUpJobs)
}
