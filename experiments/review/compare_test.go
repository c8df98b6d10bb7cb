package review

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/scenario"
)

// TestCellOf: a row's cell says one condition as before; several by
// setting, those alike together, with a ✗ before each setting that failed
// when others passed; a folder without the row says "not run".
func TestCellOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []part
		want  scenario.Cell
	}{
		{"not run", nil, scenario.Cell{Text: NotRun}},
		{"one condition", []part{{words: "1 job", pass: true}}, scenario.Cell{Text: "1 job", Mark: "✓"}},
		{"one setting", []part{{setting: "serializable", words: "1 job", pass: false}}, scenario.Cell{Text: "serializable: 1 job", Mark: "✗"}},
		{"alike together", []part{{setting: "rc", words: "2 jobs", pass: true}, {setting: "rr", words: "1 job", pass: true}, {setting: "ser", words: "2 jobs", pass: true}},
			scenario.Cell{Text: "rc, ser: 2 jobs; rr: 1 job", Mark: "✓"}},
		{"some failed", []part{{setting: "rc", words: "2 jobs", pass: false}, {setting: "rr", words: "2 jobs", pass: true}},
			scenario.Cell{Text: "✗ rc: 2 jobs; rr: 2 jobs", Mark: "✗"}},
		{"all failed", []part{{setting: "rc", words: "2 jobs", pass: false}, {setting: "rr", words: "3 jobs", pass: false}},
			scenario.Cell{Text: "rc: 2 jobs; rr: 3 jobs", Mark: "✗"}},
		{"no words", []part{{setting: "rc", pass: true}, {setting: "rr", pass: true}}, scenario.Cell{Text: "rc, rr", Mark: "✓"}},
	} {
		if got := cellOf(tc.parts); got != tc.want {
			t.Errorf("%s: %s", tc.name, cmp.Diff(tc.want, got))
		}
	}
}

// TestRowOf: a condition the scenario does not place has its own row.
func TestRowOf(t *testing.T) {
	c := scenario.Compared{Rows: map[string]scenario.Row{"p/serializable/race": {Key: "p/race", Setting: "serializable"}, "q": {}}}
	for cond, want := range map[string]scenario.Row{
		"p/serializable/race": {Key: "p/race", Setting: "serializable"},
		"p/race":              {Key: "p/race"},
		"q":                   {Key: "q"},
	} {
		if got := c.RowOf(cond); got != want {
			t.Errorf("RowOf(%q) = %+v, want %+v", cond, got, want)
		}
	}
}
