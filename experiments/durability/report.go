package durability

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/sqlitedb"
)

// codes are one letter per tag, so a cell holds a whole outcome.
var codes = map[string]string{
	OutcomeOK: ".", TagCorrupt: "C", TagLostAcked: "L", TagRolledBack: "r",
	TagLostClaim: "K", TagLostDownstream: "F", TagDuplicate: "D", TagMissing: "M", TagError: "E",
}

// Code abbreviates an outcome for the terminal table.
func Code(outcome string) string {
	if outcome == "" {
		return "-"
	}
	var b strings.Builder
	for _, t := range strings.Split(outcome, "+") {
		b.WriteString(codes[t])
	}
	return b.String()
}

// Report arranges the matrix: one row per pattern and point, one column
// per journal_mode/synchronous, each cell "kill/power" in one-letter codes.
// The matrix itself is in the result's extra data, for a heat map.
func (Scenario) Report(res results.ScenarioResult) (scenario.Section, error) {
	var sec scenario.Section
	var st Settings
	if err := scenario.DecodeStrict(res.Settings, &st); err != nil {
		return sec, fmt.Errorf("durability settings: %w", err)
	}
	sec.Settings = [][2]string{
		{"patterns", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Pattern }), ", ")},
		{"journal_mode × synchronous", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.JournalMode + "/" + c.Synchronous }), ", ")},
		{"crash kinds", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Kind }), ", ")},
		{"batch items", fmt.Sprint(st.Items)},
		{"power cut", "worker/faultvfs: unsynced data and undurable names are lost, undurable deletions come back"},
	}
	type cell struct {
		outcome string
		ok      bool
	}
	cells := map[string]map[string]map[string]cell{} // pattern/point → MODE/SYNC → kind
	var misses []string
	for _, c := range res.Conditions {
		var exp map[string][]string
		var obs map[string]Trial
		json.Unmarshal(c.Expected, &exp)
		json.Unmarshal(c.Observed, &obs)
		cond, found := findCondition(st, c.Name)
		if !found {
			continue
		}
		for pt, t := range obs {
			row := cond.Pattern + "/" + pt
			if cells[row] == nil {
				cells[row] = map[string]map[string]cell{}
			}
			col := cond.JournalMode + "/" + cond.Synchronous
			if cells[row][col] == nil {
				cells[row][col] = map[string]cell{}
			}
			ok := Allows(exp[pt], t.Outcome)
			cells[row][col][cond.Kind] = cell{t.Outcome, ok}
			if !ok {
				misses = append(misses, fmt.Sprintf("%s %s: %s, allowed %v", c.Name, pt, t.Outcome, exp[pt]))
			}
		}
	}
	var cols []string
	for _, m := range sqlitedb.JournalModes {
		for _, s := range sqlitedb.SyncLevels {
			if slices.ContainsFunc(st.Conditions, func(c Condition) bool { return c.JournalMode == m && c.Synchronous == s }) {
				cols = append(cols, m+"/"+s)
			}
		}
	}
	t := scenario.Table{
		Title:  "outcome per pattern and crash point (rows) and journal_mode/synchronous (columns): kill/power",
		Header: append([]string{"pattern / point"}, shortCols(cols)...),
		Legend: []string{
			"cell: the outcome after a process kill, then after a power cut, at that point; - not run",
			". nothing lost, no duplicate; r a crashed worker's commit rolled back (redone after); L an ACKed commit lost",
			"K a committed claim gone after the cut; F committed downstream fields gone or replaced",
			"D duplicate (2 jobs, a send accepted twice, or 2 claim winners within one TTL)",
			"M work missing at the end; C integrity_check failed; E a later worker failed",
			"! the outcome is outside the durability model's allowed set for that trial",
			"ack: no crash; the worker exited 0 and the power was cut after it, before the redelivery, resume or probe",
			"claim: after the cut a probe claims inside the TTL, then a re-claim after it finishes the work",
			"D=DELETE W=WAL; OFF NORM FULL EXTR are synchronous levels",
		},
	}
	for _, p := range AllPatterns {
		for _, pt := range append([]string{PointACK}, Points(p, st.Items)...) {
			row := p + "/" + pt
			if cells[row] == nil {
				continue
			}
			r := []string{shortRow(p, pt)}
			for _, col := range cols {
				var parts []string
				for _, k := range AllKinds {
					cl, ok := cells[row][col][k]
					s := "-"
					if ok {
						s = Code(cl.outcome)
						if !cl.ok {
							s += "!"
						}
					}
					parts = append(parts, s)
				}
				r = append(r, strings.Join(parts, "/"))
			}
			t.Rows = append(t.Rows, r)
		}
	}
	sec.Tables = []scenario.Table{t}
	if len(misses) > 0 {
		mt := scenario.Table{Title: "trials outside the model", Header: []string{"condition point: observed, allowed"}}
		for _, m := range misses {
			mt.Rows = append(mt.Rows, []string{m})
		}
		sec.Tables = append(sec.Tables, mt)
	}
	ch, err := matrixChart(res)
	if err != nil {
		return sec, err
	}
	sec.Charts = ch
	return sec, nil
}

func findCondition(st Settings, name string) (Condition, bool) {
	for _, c := range st.Conditions {
		if c.Name == name {
			return c, true
		}
	}
	return Condition{}, false
}

func uniq(cs []Condition, key func(Condition) string) []string {
	var out []string
	for _, c := range cs {
		if k := key(c); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// shortCols keeps the header narrow: "D/FULL", "W/NORM".
func shortCols(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		m, s, _ := strings.Cut(c, "/")
		if len(s) > 4 {
			s = s[:4]
		}
		out[i] = m[:1] + "/" + s
	}
	return out
}

// shortRow abbreviates a pattern and point to fit 100 columns.
func shortRow(pattern, point string) string {
	p := map[string]string{PatternSeparate: "sep", PatternSingle: "single", PatternBatch: "batch", PatternClaim: "claim"}[pattern]
	point = strings.NewReplacer("after-send-accepted", "accepted", "before-send", "before-send", "item-00", "#").Replace(point)
	return p + " " + point
}
