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

// severityStyle is one colour family per severity, from harmless to
// worst: green, blue, orange, vermillion, black (Okabe-Ito, which stays
// apart for colour-blind readers), and the words a caption uses for it.
var severityStyle = map[Severity]struct{ colour, words string }{
	SeverityNone:      {"#009E73", "green: nothing lost"},
	SeverityRedone:    {"#56B4E9", "blue: a crashed worker's commit rolled back, then redone"},
	SeverityLost:      {"#E69F00", "orange: committed or ACKed work lost"},
	SeverityDuplicate: {"#D55E00", "vermillion: work done twice"},
	SeverityBroken:    {"#000000", "black: a corrupt file, missing work or a failed worker"},
}

// tagWords explains each one-letter code in a caption.
var tagWords = map[string]string{
	TagRolledBack: "a crashed worker's commit rolled back", TagLostAcked: "an ACKed commit lost",
	TagLostClaim: "a committed claim lost", TagLostDownstream: "committed downstream fields lost or replaced",
	TagDuplicate: "duplicate", TagMissing: "work missing at the end", TagCorrupt: "integrity_check failed",
	TagError: "a later worker failed",
}

// cellLabel is what a cell shows: the terminal's one-letter codes, which
// fit any cell, and "ok" for nothing.
func cellLabel(outcome string) string {
	if outcome == OutcomeOK {
		return "ok"
	}
	return Code(outcome)
}

// heatOutcomes styles the outcomes that occur in cells, worst last: each
// takes its severity's colour; an outcome of several tags also gets a
// texture, a different one for each such outcome of the same severity, so
// a combination never looks like the plain outcome of its class.
func heatOutcomes(cells [][]string) []figure.Outcome {
	var names []string
	for _, row := range cells {
		for _, o := range row {
			if o != "" && !slices.Contains(names, o) {
				names = append(names, o)
			}
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return int(SeverityOf(a) - SeverityOf(b)) })
	next := map[Severity]int{}
	var out []figure.Outcome
	for _, o := range names {
		sev := SeverityOf(o)
		fo := figure.Outcome{Name: o, Color: severityStyle[sev].colour, Label: cellLabel(o)}
		if strings.Contains(o, "+") {
			fo.Texture = figure.Textures[next[sev]%len(figure.Textures)]
			next[sev]++
		}
		out = append(out, fo)
	}
	return out
}

// heatCaption says what the colours, textures and letters of these
// outcomes mean, naming only what the chart shows.
func heatCaption(outcomes []figure.Outcome, kind string) string {
	var classes []string
	tags := map[string]bool{}
	textured := false
	for _, o := range outcomes {
		if w := severityStyle[SeverityOf(o.Name)].words; !slices.Contains(classes, w) {
			classes = append(classes, w)
		}
		textured = textured || o.Texture != figure.Solid
		for _, t := range strings.Split(o.Name, "+") {
			tags[t] = true
		}
	}
	s := "Each cell is one trial, coloured by the worst that happened in it: " + strings.Join(classes, "; ") + "."
	if textured {
		s += " A hatched, dotted or gridded cell has more than one finding, and the worst sets its colour."
	}
	var keys []string
	for _, t := range tagOrder {
		if tags[t] {
			keys = append(keys, codes[t]+" "+tagWords[t])
		}
	}
	if len(keys) > 0 {
		s += " Letters: " + strings.Join(keys, "; ") + "."
	}
	switch kind {
	case KindKill:
		return s + ` "ack": no kill; the worker ran to its exit 0.`
	case KindServer:
		return s + ` "ack": the worker ran to its exit 0, then every process of the PostgreSQL server was SIGKILLed and the server recovered.`
	}
	return s + ` "ack": the worker ran to its exit 0, then the power was cut.`
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
	// One map per crash kind, transposed: the long pattern/point names read
	// best as row labels, and eight settings leave room for stacked column
	// heads such as "DELETE NORMAL".
	var out []scenario.Chart
	for _, kind := range []string{KindPower, KindServer, KindKill} {
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
		used := heatOutcomes(cells)
		colLabel := "journal_mode, synchronous"
		if strings.HasPrefix(cols[0], "synchronous_commit=") {
			colLabel = "PostgreSQL's synchronous_commit"
		}
		h := figure.HeatMap{
			Title: "outcome after a " + kindWords[kind] + ", per crash point and setting", RowLabel: "pattern / crash point", ColLabel: colLabel,
			Rows: m.Columns, Cols: cols, Outcomes: used, Cells: cells,
		}
		svg, err := h.SVG()
		if err != nil {
			return nil, err
		}
		out = append(out, scenario.Chart{
			Title: "Durability matrix, " + kindWords[kind], Slug: "durability-" + kind, SVG: svg,
			Caption: heatCaption(used, kind),
		})
	}
	return out, nil
}

var kindWords = map[string]string{KindPower: "power cut", KindKill: "process kill", KindServer: "server crash"}
