package durability

import (
	"slices"
	"strings"
)

// Extra is the scenario's derived extra table: the matrix for a heat map.
type Extra struct {
	Matrix Matrix `json:"matrix"`
}

// Matrix is setting × point → outcome. Rows are "MODE/SYNC/kind",
// columns "pattern/point"; an empty outcome means not run.
type Matrix struct {
	Rows     []string   `json:"rows"`
	Columns  []string   `json:"columns"`
	Outcomes [][]string `json:"outcomes"`
	// Severity orders outcomes for colour: 0 ok, 1 rolled back, 2 lost
	// acknowledged work, duplicate, missing or error, 3 corrupt; -1 not run.
	Severity [][]int `json:"severity"`
}

// Severity ranks an outcome for the heat map.
func Severity(outcome string) int {
	switch {
	case outcome == "":
		return -1
	case outcome == OutcomeOK:
		return 0
	case strings.Contains(outcome, TagCorrupt):
		return 3
	case outcome == TagRolledBack:
		return 1
	}
	return 2
}

// BuildMatrix lays the observed outcomes out as setting × point.
func BuildMatrix(st Settings, observed map[string]any) Matrix {
	var m Matrix
	rowIdx, colIdx := map[string]int{}, map[string]int{}
	for _, p := range AllPatterns {
		for _, pt := range append([]string{PointACK}, Points(p, st.Items)...) {
			if slices.ContainsFunc(st.Conditions, func(c Condition) bool { return c.Pattern == p }) {
				colIdx[p+"/"+pt] = len(m.Columns)
				m.Columns = append(m.Columns, p+"/"+pt)
			}
		}
	}
	for _, c := range st.Conditions {
		r := c.JournalMode + "/" + c.Synchronous + "/" + c.Kind
		if _, ok := rowIdx[r]; !ok {
			rowIdx[r] = len(m.Rows)
			m.Rows = append(m.Rows, r)
		}
	}
	for range m.Rows {
		o := make([]string, len(m.Columns))
		s := make([]int, len(m.Columns))
		for j := range s {
			s[j] = -1
		}
		m.Outcomes, m.Severity = append(m.Outcomes, o), append(m.Severity, s)
	}
	for _, c := range st.Conditions {
		trials, _ := observed[c.Name].(map[string]Trial)
		i := rowIdx[c.JournalMode+"/"+c.Synchronous+"/"+c.Kind]
		for pt, t := range trials {
			if j, ok := colIdx[c.Pattern+"/"+pt]; ok {
				m.Outcomes[i][j], m.Severity[i][j] = t.Outcome, Severity(t.Outcome)
			}
		}
	}
	return m
}
