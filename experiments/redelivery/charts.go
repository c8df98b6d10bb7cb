package redelivery

import (
	"idemlab/experiments/harness"
	"idemlab/experiments/scenario"
)

func jobsChart(res harness.ScenarioResult) ([]scenario.Chart, error) { return nil, nil }
