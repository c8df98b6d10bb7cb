package figure_test

import (
	"fmt"

	"idemlab/experiments/figure"
)

// Observed rows against the oracle's expectation: whole numbers give an
// axis of 0, 1, 2 and a zero is drawn as a mark labelled 0.
func ExampleBarChart() {
	svg, err := figure.BarChart{
		Title:        "follow_up_jobs rows after each delivery",
		YLabel:       "rows",
		Categories:   []string{"separate-commit", "single-transaction"},
		ExpectedName: "expected (oracle)",
		Series: []figure.Series{
			{Name: "after delivery 1", Values: []float64{1, 0}, Expected: []float64{1, 1}},
			{Name: "after delivery 2", Values: []float64{2, figure.Missing()}, Expected: []float64{1, figure.Missing()}},
		},
	}.SVG()
	fmt.Println(len(svg) > 0, err)
	// Output: true <nil>
}

// Milliseconds per trial against the simulated floor of the same condition.
func ExampleLineChart() {
	svg, err := figure.LineChart{
		Title:  "batch resume time per trial",
		XLabel: "trial",
		YLabel: "ms",
		Series: []figure.XYSeries{{Name: "journal", X: []float64{1, 2, 3}, Y: []float64{121, 118, 130}}},
		References: []figure.Reference{
			{Name: "journal floor (simulated latency)", Y: 100, Series: "journal"},
		},
	}.SVG()
	fmt.Println(len(svg) > 0, err)
	// Output: true <nil>
}

// A crash-exploration matrix: pattern × crash point → outcome. Cells with
// no run are "" and stay empty.
func ExampleHeatMap() {
	svg, err := figure.HeatMap{
		Title:    "crash exploration",
		RowLabel: "pattern",
		ColLabel: "crash point",
		Rows:     []string{"separate-commit", "single-transaction"},
		Cols:     []string{"after-job-commit", "before-commit"},
		Outcomes: []figure.Outcome{{Name: "exactly once", Color: "#009E73"}, {Name: "duplicate job", Color: "#D55E00"}},
		Cells:    [][]string{{"duplicate job", ""}, {"", "exactly once"}},
	}.SVG()
	fmt.Println(len(svg) > 0, err)
	// Output: true <nil>
}
