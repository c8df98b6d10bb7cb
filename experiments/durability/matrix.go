package durability

import (
	"maps"
	"slices"
	"strings"
)

// Extra is the scenario's derived extra table: the matrix for a heat map.
type Extra struct {
	Matrix Matrix `json:"matrix"`
}

// Matrix is setting × point → outcome. Rows are "MODE/SYNC/kind" on
// SQLite, "synchronous_commit=LEVEL/kind" on PostgreSQL; columns
// "pattern/point"; an empty outcome means not run.
type Matrix struct {
	Rows     []string   `json:"rows"`
	Columns  []string   `json:"columns"`
	Outcomes [][]string `json:"outcomes"`
	// Severity is each cell's SeverityOf: 0 nothing lost, 1 rolled back
	// and redone, 2 committed or ACKed work lost, 3 duplicate, 4 corrupt,
	// missing or a failed worker; -1 not run.
	Severity [][]int `json:"severity"`
}

// BuildMatrix lays the observed outcomes out as setting × point.
func BuildMatrix(st Settings, observed map[string]any) Matrix {
	var m Matrix
	rowIdx, colIdx := map[string]int{}, map[string]int{}
	for _, p := range AllPatterns {
		cols := append([]string{PointACK}, Points(p, st.Items)...)
		if st.Backend == "" {
			cols = append(cols, ExtraPoints(p)...)
		}
		if st.SyncPoints {
			cols = append(cols, rowSync)
		}
		for _, pt := range cols {
			if slices.ContainsFunc(st.Conditions, func(c Condition) bool { return c.Pattern == p }) {
				colIdx[p+"/"+pt] = len(m.Columns)
				m.Columns = append(m.Columns, p+"/"+pt)
			}
		}
	}
	for _, c := range st.Conditions {
		r := c.SettingName() + "/" + c.Kind
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
		i := rowIdx[c.SettingName()+"/"+c.Kind]
		// Seeds of one point, and the cuts inside syncs, share a cell,
		// which shows the worst of them.
		for _, k := range slices.Sorted(maps.Keys(trials)) {
			pt, _, _ := strings.Cut(k, "#")
			j, ok := colIdx[c.Pattern+"/"+matrixRow(pt)]
			if sv := int(SeverityOf(trials[k].Outcome)); ok && sv > m.Severity[i][j] {
				m.Outcomes[i][j], m.Severity[i][j] = trials[k].Outcome, sv
			}
		}
	}
	return m
}
