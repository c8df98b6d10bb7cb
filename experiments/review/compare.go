package review

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"sync"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// NotRun is the cell of a scenario or condition a folder does not hold,
// such as a condition only one backend has.
const NotRun = "not run"

// Comparison sets several verified folders side by side, one column per
// folder: the same patterns on SQLite and on PostgreSQL, or under two
// isolation levels. Every cell is a condition's verdict and its key
// outcome as the scenario's Compare says it from the derived result.
type Comparison struct {
	Folders   []ComparedFolder
	Scenarios []ComparedScenario
	Notices   []string
}

// ComparedFolder is one column: a folder as its results.json describes
// it.
type ComparedFolder struct {
	Dir string
	// Server is the database software the run recorded: PostgreSQL's
	// version as the parent read it back, or the SQLite library's.
	Server  string
	Run     string
	Verdict string
}

// ComparedScenario is one scenario's table: a row for the database each
// folder's workers read back, then one row per condition.
type ComparedScenario struct {
	Name    string
	Table   Table
	Legends []string
}

// BuildComparison arranges verified folders side by side. The scenarios
// come in the registry's order; the conditions in the order the folders
// first name them.
func BuildComparison(outs []*Outcome, reg scenario.Registry) (*Comparison, error) {
	cmp := &Comparison{}
	for _, o := range outs {
		if o.Derived == nil || o.Folder == nil || o.Folder.Results == nil {
			return nil, fmt.Errorf("%s: results.json is unreadable", o.Folder.Dir)
		}
		cmp.Folders = append(cmp.Folders, describeFolder(o))
	}
	for _, s := range reg {
		sc, ok, err := compareScenario(s, outs, cmp.Folders)
		if err != nil {
			return nil, err
		}
		if ok {
			cmp.Scenarios = append(cmp.Scenarios, sc)
		}
	}
	return cmp, nil
}

// describeFolder heads a folder's column with what its results.json
// recorded, and the run's verdict as the records give it.
func describeFolder(o *Outcome) ComparedFolder {
	r := o.Folder.Results
	f := ComparedFolder{Dir: o.Folder.Dir, Run: r.StartedAt + " → " + r.FinishedAt, Verdict: "PASS"}
	if !o.Derived.Pass {
		f.Verdict = "FAIL"
	}
	if v := r.Environment.PostgresVersion; v != "" {
		f.Server = "PostgreSQL " + v
	} else {
		f.Server = "SQLite " + r.Environment.SQLiteVersion
	}
	return f
}

// compareScenario builds s's table over every folder; ok is false when
// no folder ran s. A row is a pattern and fault as the scenario's Compare
// places its conditions (by default each condition its own row), so a
// condition whose name carries a backend's setting stands beside the
// other backend's.
func compareScenario(s scenario.Scenario, outs []*Outcome, folders []ComparedFolder) (ComparedScenario, bool, error) {
	sc := ComparedScenario{Name: s.Name(), Table: Table{Header: []string{"condition"}}}
	db := []scenario.Cell{{Text: "database (read back)"}}
	var order []string
	parts := map[string][][]part{}
	ran := false
	for i, o := range outs {
		sc.Table.Header = append(sc.Table.Header, folders[i].Dir)
		res, found := scenarioOf(o.Derived, s.Name())
		if !found {
			db = append(db, scenario.Cell{Text: NotRun})
			continue
		}
		ran = true
		words, err := s.Compare(res)
		if err != nil {
			return sc, false, fmt.Errorf("%s: scenario %s: %w", folders[i].Dir, s.Name(), err)
		}
		if words.Database == "" {
			words.Database = folders[i].Server
		}
		db = append(db, scenario.Cell{Text: words.Database})
		if words.Legend != "" && !slices.Contains(sc.Legends, words.Legend) {
			sc.Legends = append(sc.Legends, words.Legend)
		}
		for _, c := range res.Conditions {
			row := words.RowOf(c.Name)
			if _, seen := parts[row.Key]; !seen {
				order = append(order, row.Key)
				parts[row.Key] = make([][]part, len(outs))
			}
			parts[row.Key][i] = append(parts[row.Key][i], part{setting: row.Setting, words: words.Outcomes[c.Name], pass: c.Pass})
		}
	}
	sc.Table.Rows = append(sc.Table.Rows, db)
	for _, key := range order {
		row := []scenario.Cell{{Text: key}}
		for _, ps := range parts[key] {
			row = append(row, cellOf(ps))
		}
		sc.Table.Rows = append(sc.Table.Rows, row)
	}
	return sc, ran, nil
}

// part is one condition in a row's cell: its setting, its outcome in a
// few words and its verdict.
type part struct {
	setting, words string
	pass           bool
}

// cellOf says a folder's conditions of one row in one cell. A single
// condition without a setting is its words and verdict. Several are
// listed by setting, those with the same words and verdict together
// ("read-committed, serializable: …"); the cell's mark is ✓ only if all
// passed, and when only some did, a ✗ leads each part that failed.
func cellOf(ps []part) scenario.Cell {
	if len(ps) == 0 {
		return scenario.Cell{Text: NotRun}
	}
	all, some := true, false
	for _, p := range ps {
		all, some = all && p.pass, some || p.pass
	}
	if len(ps) == 1 && ps[0].setting == "" {
		return scenario.Cell{Text: ps[0].words, Mark: harness.Mark(all)}
	}
	type group struct {
		settings []string
		words    string
		pass     bool
	}
	var groups []group
	for _, p := range ps {
		k := slices.IndexFunc(groups, func(g group) bool { return g.words == p.words && g.pass == p.pass })
		if k < 0 {
			groups = append(groups, group{words: p.words, pass: p.pass})
			k = len(groups) - 1
		}
		if p.setting != "" {
			groups[k].settings = append(groups[k].settings, p.setting)
		}
	}
	texts := make([]string, 0, len(groups))
	for _, g := range groups {
		t := strings.Join(g.settings, ", ")
		switch {
		case t == "":
			t = g.words
		case g.words != "":
			t += ": " + g.words
		}
		if !g.pass && some {
			t = harness.Mark(false) + " " + t
		}
		texts = append(texts, t)
	}
	return scenario.Cell{Text: strings.Join(texts, "; "), Mark: harness.Mark(all)}
}

func scenarioOf(r *results.Results, name string) (results.ScenarioResult, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return results.ScenarioResult{}, false
}

// verifyAll verifies every folder before any is compared; the first that
// does not verify is named, with verify's class.
func verifyAll(ctx context.Context, dirs []string, reg scenario.Registry, lim results.Limits) ([]*Outcome, error) {
	var outs []*Outcome
	for _, dir := range dirs {
		out, err := Verify(ctx, dir, Options{Registry: reg, Limits: lim})
		if err != nil {
			return nil, err
		}
		if !out.OK() {
			return nil, fmt.Errorf("%w: %s does not verify (%d finding(s), the first: %s), so it is not compared; run idemlab verify %s for the list", errclass.ErrFindings, dir, len(out.Findings), out.Findings[0], dir)
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// RenderComparisonMarkdown writes the comparison as GitHub-flavoured
// Markdown.
func RenderComparisonMarkdown(w *strings.Builder, c *Comparison) {
	w.WriteString("# idemlab report: folders side by side\n\n")
	w.WriteString("Every folder was verified first: each cell derives from that folder's records, as `idemlab verify` derives it. A row is a pattern under a fault; a cell is the folder's condition of that row, its outcome in a few words and its verdict, or, where the folder ran the row under several settings (isolation levels, journal modes, synchronous_commit), each setting's, with a ✗ before a setting that failed where others passed; \"not run\" marks a row the folder does not hold.\n\n")
	mdTable(w, foldersTable(c))
	for _, n := range c.Notices {
		fmt.Fprintf(w, "- %s\n", mdEscape(n))
	}
	for _, s := range c.Scenarios {
		fmt.Fprintf(w, "## %s\n\n", s.Name)
		mdTable(w, s.Table)
		for _, l := range s.Legends {
			fmt.Fprintf(w, "- %s\n", mdEscape(l))
		}
		if len(s.Legends) > 0 {
			w.WriteString("\n")
		}
	}
}

func foldersTable(c *Comparison) Table {
	t := Table{Header: []string{"folder", "database server", "run", "verdict"}}
	for _, f := range c.Folders {
		t.Rows = append(t.Rows, []scenario.Cell{{Text: f.Dir}, {Text: f.Server}, {Text: f.Run}, {Text: f.Verdict}})
	}
	return t
}

// comparisonTemplate is the comparison's HTML page, parsed on first use
// like the report's.
var comparisonTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("compare").Funcs(template.FuncMap{
		"mark":  markClass,
		"badge": badge,
		"css":   func() template.CSS { return template.CSS(pageCSS) },
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idemlab report: folders side by side</title>
<style>
{{css}}
body { max-width: 1300px; }
</style>
</head>
<body>
<h1>idemlab report: folders side by side</h1>
<p>Every folder was verified first: each cell derives from that folder's records, as <code>idemlab verify</code> derives it. A row is a pattern under a fault; a cell is the folder's condition of that row, its outcome in a few words and its verdict, or, where the folder ran the row under several settings (isolation levels, journal modes, synchronous_commit), each setting's, with a ✗ before a setting that failed where others passed; "not run" marks a row the folder does not hold.</p>
<table><thead><tr><th>folder</th><th>database server</th><th>run</th><th>verdict</th></tr></thead>
<tbody>{{range .Folders}}<tr><td><code>{{.Dir}}</code></td><td>{{.Server}}</td><td>{{.Run}}</td><td>{{badge .Verdict}}</td></tr>
{{end}}</tbody></table>
{{if .Notices}}<ul class="notices">{{range .Notices}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Scenarios}}<section id="scenario-{{.Name}}">
<h2>{{.Name}}</h2>
<table><thead><tr>{{range .Table.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Table.Rows}}<tr>{{range .}}<td{{mark .Mark}}>{{.Text}}{{if .Mark}}{{if .Text}} {{end}}{{.Mark}}{{end}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{if .Legends}}<ul class="legend">{{range .Legends}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>
{{end}}</body>
</html>
`))
})

// RenderComparisonHTML writes the comparison as one self-contained page.
func RenderComparisonHTML(w io.Writer, c *Comparison) error {
	return execute(w, comparisonTemplate(), c)
}
