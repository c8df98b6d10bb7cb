package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"idemlab/experiments/harness"
)

// Report is a results folder arranged for reading: the articles' tables
// beside the reproduced figures, each scenario's conditions, charts, the
// environment and the hashes, and whatever the consistency checks found.
type Report struct {
	Folder      string
	Pass        bool
	StartedAt   string
	FinishedAt  string
	Environment []Pair
	Hashes      []Pair
	Articles    []ArticleSection
	Scenarios   []ScenarioSection
	Findings    []Finding
	Notices     []string
}

// Pair is one labelled value.
type Pair struct{ Name, Value string }

// ArticleSection is one article's published table beside the reproduced
// figures.
type ArticleSection struct {
	ID       string
	Title    string
	Source   string
	Scenario string
	Unit     string
	Table    Table
	Notes    []string
	// Matches and Cells count the compared cells.
	Matches, Cells int
}

// ScenarioSection is one scenario's conditions and charts.
type ScenarioSection struct {
	Name       string
	Pass       bool
	Settings   string
	Conditions Table
	Charts     []Chart
}

// Table is a plain table of cells.
type Table struct {
	Header []string
	Rows   [][]Cell
}

// Cell is a table cell with an optional ✓/✗ mark.
type Cell struct {
	Text string
	Mark string
}

// Chart is one rendered SVG figure.
type Chart struct {
	Title   string
	Slug    string
	Caption string
	SVG     []byte
}

// ErrUnreadable means the folder's results.json could not be read, so there
// is nothing to render.
var ErrUnreadable = errors.New("results folder unreadable")

// BuildReport arranges a loaded folder. It runs the internal consistency
// checks (not the hashes, which need the input file and the source tree) so
// that a reader sees when the figures do not hold together.
func BuildReport(f *Folder) (*Report, error) {
	if f.Results == nil {
		var msgs []string
		for _, x := range f.Findings {
			msgs = append(msgs, x.String())
		}
		return nil, fmt.Errorf("%w: %s", ErrUnreadable, strings.Join(msgs, "; "))
	}
	r := f.Results
	rep := &Report{
		Folder: f.Dir, Pass: r.Pass, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Environment: []Pair{
			{"Go", r.Environment.GoVersion},
			{"OS/arch", r.Environment.GOOS + "/" + r.Environment.GOARCH},
			{"SQLite", r.Environment.SQLiteVersion},
			{"CPUs", fmt.Sprint(r.Environment.NumCPU)},
			{"tool", strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version)},
		},
		Hashes: []Pair{
			{"input " + r.Inputs.Path + " (sha256)", r.Inputs.SHA256},
			{"executable (sha256)", r.Code.ExecutableSHA256},
		},
	}
	if r.Tool.VCSRevision != "" {
		mod := ""
		if r.Tool.VCSModified != nil && *r.Tool.VCSModified {
			mod = " (modified)"
		}
		rep.Environment = append(rep.Environment, Pair{"VCS revision", r.Tool.VCSRevision + mod})
	}
	if r.Code.Source != nil {
		rep.Hashes = append(rep.Hashes, Pair{fmt.Sprintf("source tree, %d files (sha256)", r.Code.Source.Files), r.Code.Source.SHA256})
	} else {
		rep.Hashes = append(rep.Hashes, Pair{"source tree", "not hashed: " + r.Code.SourceNote})
	}
	cf, cn := consistency(f)
	rep.Findings = append(append([]Finding{}, f.Findings...), cf...)
	rep.Notices = append(rep.Notices, cn...)
	present := map[string]bool{}
	for _, s := range r.Scenarios {
		present[s.Name] = true
		p, hasPlugin := plugins[s.Name]
		sec := ScenarioSection{Name: s.Name, Pass: s.Pass, Settings: compactLong(s.Settings)}
		sec.Conditions = conditionsTable(s, p.cell)
		if hasPlugin && p.charts != nil {
			charts, err := p.charts(f, s)
			if err != nil {
				rep.Notices = append(rep.Notices, fmt.Sprintf("scenario %s: charts not drawn: %v", s.Name, err))
			}
			sec.Charts = charts
		}
		rep.Scenarios = append(rep.Scenarios, sec)
		if hasPlugin && p.article != "" && p.articleTable != nil {
			pub, err := Published(p.article)
			if err != nil {
				rep.Notices = append(rep.Notices, err.Error())
				continue
			}
			a, err := p.articleTable(pub, s)
			if err != nil {
				rep.Notices = append(rep.Notices, fmt.Sprintf("scenario %s: article table not built: %v", s.Name, err))
				continue
			}
			rep.Articles = append(rep.Articles, *a)
		} else if !hasPlugin {
			rep.Notices = append(rep.Notices, fmt.Sprintf("scenario %s: no report plug-in; conditions shown as recorded", s.Name))
		}
	}
	for _, name := range []string{"000.json", "002.json", "003.json"} {
		b, err := Published(name)
		if err != nil {
			continue
		}
		var head struct{ Article, Title, Scenario string }
		if json.Unmarshal(b, &head) == nil && !present[head.Scenario] {
			rep.Notices = append(rep.Notices, fmt.Sprintf("article %s (%s): scenario %q is not in this folder", head.Article, head.Title, head.Scenario))
		}
	}
	sort.SliceStable(rep.Articles, func(i, j int) bool { return rep.Articles[i].ID < rep.Articles[j].ID })
	return rep, nil
}

// conditionsTable lists a scenario's conditions with expected and observed
// side by side.
func conditionsTable(s harness.ScenarioResult, cell func(any) string) Table {
	if cell == nil {
		cell = compactLong
	}
	t := Table{Header: []string{"condition", "expected", "observed", "ok"}}
	for _, c := range s.Conditions {
		t.Rows = append(t.Rows, []Cell{{Text: c.Name}, {Text: cell(c.Expected)}, {Text: cell(c.Observed)}, {Mark: harness.Mark(c.Pass)}})
	}
	return t
}

// compactLong renders a JSON value on one line for the report's tables,
// which have room for more than a finding does.
func compactLong(v any) string {
	if v == nil {
		return ""
	}
	return compactN(v, 400)
}
