package pattern

import (
	pf "idemlab/experiments/subject/patternfile"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/scenario"
)

// TestLandingsText: the kills are counted by where they landed, in the
// order of the first trial that landed there.
func TestLandingsText(t *testing.T) {
	tests := []struct {
		name  string
		kills []KillLanding
		want  string
	}{
		{"none", nil, ""},
		{"one place", []KillLanding{{Trial: 0, Landing: pf.LandedAfterLast}, {Trial: 1, Landing: pf.LandedAfterLast}}, pf.LandedAfterLast + ": 2"},
		{"first landing first", []KillLanding{{Trial: 0, Landing: "between points 2 and 3"}, {Trial: 1, Landing: LandedBeforeFirst}, {Trial: 2, Landing: "between points 2 and 3"}}, "between points 2 and 3: 2; " + LandedBeforeFirst + ": 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, landingsText(tc.kills)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAddFailed: the failed steps' column comes after "broke" only when
// some delivery's step failed, each row's classes in name order: empty
// for a row with none (a model's), "-" for a row that runs no trials (a
// class not run).
func TestAddFailed(t *testing.T) {
	header := []string{"fault", "trials", "broke", "verdict", "first"}
	row := func(f string) []string { return []string{f, "6", "0", "held", ""} }
	tests := []struct {
		name   string
		failed []map[string]int
		header []string
		cells  []string
	}{
		{"none failed", []map[string]int{nil, {}}, header, nil},
		{"some failed", []map[string]int{{"serialization": 3, "constraint": 1}, nil}, []string{"fault", "trials", "broke", "failed steps", "verdict", "first"}, []string{"constraint 1, serialization 3", "", "-"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := scenario.Table{Header: append([]string{}, header...), Legend: []string{"broke: …", "verdict: …"}, Rows: [][]string{row("points"), row("  · drop"), row("power")}}
			addFailed(&tb, tc.failed)
			if diff := cmp.Diff(tc.header, tb.Header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			var cells []string
			for _, r := range tb.Rows {
				if len(r) > len(header) {
					cells = append(cells, r[3])
				}
			}
			if diff := cmp.Diff(tc.cells, cells); diff != "" {
				t.Errorf("the failed steps' cells (-want +got):\n%s", diff)
			}
		})
	}
}
