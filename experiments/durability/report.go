package durability

import (
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

// Report arranges the result: what it found, in sentences, then the
// matrix, one row per pattern and point, one column per
// journal_mode/synchronous, each cell "kill/power" in one-letter codes, and
// the trials outside the model. The matrix itself is in the extra data,
// for a heat map.
func (Scenario) Report(st Settings, res results.ScenarioResult, _ Extra) (scenario.Section, error) {
	// A pass means every outcome is one the model allows, which may well
	// be a loss; the verdict says so.
	sec := scenario.Section{Verdict: scenario.ModelVerdict(res.Pass), Lead: Lead(st, res)}
	sec.Settings = [][2]string{
		{"patterns", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Pattern }), ", ")},
		{"journal_mode × synchronous", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.JournalMode + "/" + c.Synchronous }), ", ")},
		{"crash kinds", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Kind }), ", ")},
		{"batch items", fmt.Sprint(st.Items)},
		{"power cut", "worker/faultvfs: unsynced data and undurable names are lost, undurable deletions come back"},
	}
	cells := cellsOf(st, res)
	sec.Tables = []scenario.Table{matrixTable(st, cells)}
	var misses []string
	for _, c := range cells {
		if !c.ok() {
			misses = append(misses, fmt.Sprintf("%s: %s, allowed %v", c.name(), c.outcome, c.allowed))
		}
	}
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

// matrixLegend explains the matrix's codes.
var matrixLegend = []string{
	"cell: the outcome after a process kill, then after a power cut, at that point; - not run",
	". nothing lost, no duplicate; r a crashed worker's commit rolled back (redone after); L an ACKed commit lost",
	"K a committed claim gone after the cut; F committed downstream fields gone or replaced",
	"D duplicate (2 jobs, a send accepted twice, or 2 claim winners within one TTL)",
	"M work missing at the end; C integrity_check failed; E a later worker failed",
	"! the outcome is outside the durability model's allowed set for that trial",
	"ack: no crash; the worker exited 0 and the power was cut after it, before the redelivery, resume or probe",
	"claim: after the cut a probe claims inside the TTL, then a re-claim after it finishes the work",
	"D=DELETE W=WAL; OFF NORM FULL EXTR are synchronous levels",
}

// matrixTable lays the cells out: a row per pattern and point, a column
// per setting, "kill/power" in each.
func matrixTable(st Settings, cells []cell) scenario.Table {
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
		Legend: matrixLegend,
	}
	at := map[string]cell{} // pattern/point MODE/SYNC kind
	for _, c := range cells {
		at[c.cond.Pattern+"/"+c.point+" "+c.setting()+" "+c.cond.Kind] = c
	}
	for _, p := range AllPatterns {
		for _, pt := range append([]string{PointACK}, Points(p, st.Items)...) {
			r := []string{shortRow(p, pt)}
			seen := false
			for _, col := range cols {
				var parts []string
				for _, k := range AllKinds {
					c, ok := at[p+"/"+pt+" "+col+" "+k]
					s := "-"
					if ok {
						s, seen = Code(c.outcome), true
						if !c.ok() {
							s += "!"
						}
					}
					parts = append(parts, s)
				}
				r = append(r, strings.Join(parts, "/"))
			}
			if seen {
				t.Rows = append(t.Rows, r)
			}
		}
	}
	return t
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
