package review

import (
	"encoding/json"
	"fmt"
	"sort"

	"idemlab/experiments/harness"
)

// The batch plug-in only draws: its checks and rerun projection are the
// generic ones until a batch-specific check is written.
func init() {
	register("batch", plugin{charts: chartsBatch})
}

// batchTiming is one entry of the batch scenario's extra.timings, read
// leniently so that added fields do not break the chart.
type batchTiming struct {
	Mode      string    `json:"mode"`
	Condition string    `json:"condition"`
	MS        []float64 `json:"ms"`
	FloorMS   float64   `json:"floor_ms"`
}

func chartsBatch(_ *Folder, s harness.ScenarioResult) ([]Chart, error) {
	b, err := json.Marshal(s.Extra)
	if err != nil {
		return nil, err
	}
	var extra struct {
		Timings []batchTiming `json:"timings"`
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		return nil, fmt.Errorf("read extra.timings: %w", err)
	}
	byMode := map[string][]batchTiming{}
	var modes []string
	for _, t := range extra.Timings {
		if t.Condition != "rerun-all" && t.Condition != "journal" {
			continue
		}
		if _, ok := byMode[t.Mode]; !ok {
			modes = append(modes, t.Mode)
		}
		byMode[t.Mode] = append(byMode[t.Mode], t)
	}
	sort.Strings(modes)
	var charts []Chart
	for _, m := range modes {
		var series []XYSeries
		for _, t := range byMode[m] {
			var xs, floor []float64
			for i := range t.MS {
				xs = append(xs, float64(i+1))
				floor = append(floor, t.FloorMS)
			}
			series = append(series,
				XYSeries{Name: t.Condition + " (measured)", X: xs, Y: t.MS},
				XYSeries{Name: t.Condition + " floor (simulated latency)", X: xs, Y: floor, Dashed: true})
		}
		svg, err := lineChart("batch "+m+": resume time per trial vs simulated floor", "trial", "ms", series)
		if err != nil {
			return charts, err
		}
		charts = append(charts, Chart{
			Title: "Batch timings, " + m, Slug: "batch-timings-" + m, SVG: svg,
			Caption: "Wall time of the resume runs in each trial (rerun all: run 2; journal: runs 2 and 3), against the sum of the simulated step latencies they had to wait for. Timings are data, not a pass/fail check.",
		})
	}
	return charts, nil
}
