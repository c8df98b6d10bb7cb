package explore

import (
	"idemlab/experiments/figure"
	"idemlab/experiments/scenario"
)

// sweepChart draws the sweep matrix as a heat map: crash point × pattern
// → the outcome after recovery. Outcomes that broke an invariant are drawn
// in warm colours, the rest in green and blue.
func sweepChart(m Matrix) ([]scenario.Chart, error) {
	if len(m.Points) == 0 {
		return nil, nil
	}
	good := []string{"#009E73", "#56B4E9", "#0072B2", "#8FD3B6"}
	bad := []string{"#D55E00", "#E69F00", "#CC79A7", "#A6361C", "#F0C05A"}
	colour := map[string]string{}
	var outcomes []figure.Outcome
	for i := range m.Cells {
		for j, o := range m.Cells[i] {
			if o == "" {
				continue
			}
			if _, ok := colour[o]; ok {
				continue
			}
			palette := &good
			if m.Violating[i][j] {
				palette = &bad
			}
			c := ""
			if len(*palette) > 0 {
				c, *palette = (*palette)[0], (*palette)[1:]
			}
			colour[o] = c
			outcomes = append(outcomes, figure.Outcome{Name: o, Color: c})
		}
	}
	h := figure.HeatMap{
		Title: "outcome after recovery, per crash point", RowLabel: "crash point", ColLabel: "pattern",
		Rows: m.Points, Cols: m.Patterns, Outcomes: outcomes, Cells: m.Cells,
	}
	svg, err := h.SVG()
	if err != nil {
		return nil, err
	}
	return []scenario.Chart{{
		Title: "Crash-point sweep", Slug: "explore-sweep", SVG: svg,
		Caption: "Each cell is one trial: the worker crashed at that point, then the recovery ran. Warm colours broke an invariant; an empty cell is a point the pattern does not pass.",
	}}, nil
}
