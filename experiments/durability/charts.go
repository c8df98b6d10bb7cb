package durability

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/figure"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// severityColour colours an outcome by how bad it is: kept, rolled back a
// crashed worker's commit, lost acknowledged work or duplicated it, corrupt.
var severityColour = map[int][]string{
	0: {"#009E73"},
	1: {"#56B4E9", "#0072B2", "#8FD3B6"},
	2: {"#D55E00", "#E69F00", "#CC79A7", "#A6361C", "#F0C05A", "#B5651D"},
	3: {"#000000"},
}

// matrixChart draws the durability matrix as a heat map.
func matrixChart(res results.ScenarioResult) ([]scenario.Chart, error) {
	var ex Extra
	if len(res.Extra) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(res.Extra, &ex); err != nil {
		return nil, fmt.Errorf("durability extra: %w", err)
	}
	m := ex.Matrix
	if len(m.Rows) == 0 {
		return nil, nil
	}
	left := map[int][]string{}
	for k, v := range severityColour {
		left[k] = append([]string{}, v...)
	}
	seen := map[string]bool{}
	var outcomes []figure.Outcome
	for i := range m.Outcomes {
		for j, o := range m.Outcomes[i] {
			if o == "" || seen[o] {
				continue
			}
			seen[o] = true
			sev := m.Severity[i][j]
			c := ""
			if p := left[sev]; len(p) > 0 {
				c, left[sev] = p[0], p[1:]
			}
			outcomes = append(outcomes, figure.Outcome{Name: o, Color: c})
		}
	}
	// One map per crash kind, transposed: the long pattern/point names read
	// best as row labels, and eight settings leave room for stacked column
	// heads such as "DELETE NORMAL".
	var out []scenario.Chart
	for _, kind := range []string{KindPower, KindKill} {
		var cols []string
		var idx []int
		for i, r := range m.Rows {
			if strings.HasSuffix(r, "/"+kind) {
				cols = append(cols, strings.ReplaceAll(strings.TrimSuffix(r, "/"+kind), "/", " "))
				idx = append(idx, i)
			}
		}
		if len(cols) == 0 {
			continue
		}
		cells := make([][]string, len(m.Columns))
		for j := range m.Columns {
			for _, i := range idx {
				cells[j] = append(cells[j], m.Outcomes[i][j])
			}
		}
		var used []figure.Outcome
		for _, o := range outcomes {
			for _, row := range cells {
				if slices.Contains(row, o.Name) {
					used = append(used, o)
					break
				}
			}
		}
		h := figure.HeatMap{
			Title: "outcome after a " + kindWords[kind] + ", per crash point and setting", RowLabel: "pattern / crash point", ColLabel: "journal_mode, synchronous",
			Rows: m.Columns, Cols: cols, Outcomes: used, Cells: cells,
		}
		svg, err := h.SVG()
		if err != nil {
			return nil, err
		}
		out = append(out, scenario.Chart{
			Title: "Durability matrix, " + kindWords[kind], Slug: "durability-" + kind, SVG: svg,
			Caption: "Each cell is one trial. Green: nothing lost; blue: a crashed worker's commit rolled back and redone; warm colours: acknowledged work lost or done twice; black: the file failed integrity_check. \"ack\" is a crash after the worker exited 0.",
		})
	}
	return out, nil
}

var kindWords = map[string]string{KindPower: "power cut", KindKill: "process kill"}
