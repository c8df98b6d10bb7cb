package review

import (
	"fmt"
	"path/filepath"
	"strings"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Report is a results folder arranged for reading: the articles' tables
// beside the reproduced figures, each scenario's tables and charts, the
// environment and the hashes, and whatever verify found.
type Report struct {
	Folder     string
	StartedAt  string
	FinishedAt string
	// Verdict is PASS, FAIL, or DOES NOT VERIFY when there are findings,
	// so the badge never contradicts the findings.
	Verdict string
	// Made says how many shards made a merged folder, or which shard a
	// shard's folder is; empty for a folder of one whole run.
	Made        string
	Environment []Pair
	Hashes      []Pair
	Articles    []ArticleSection
	Scenarios   []ScenarioSection
	Findings    []results.Finding
	Notices     []string
	// CodeChanged says how the code here differs from the run's (the
	// working tree, when the report is rendered inside the idemlab source
	// tree); the page shows a "code changed" badge, and the report still
	// renders and exits 0.
	CodeChanged []string
}

// Pair is one labelled value.
type Pair struct{ Name, Value string }

// ArticleSection is one article's published table beside the reproduced
// figures.
type ArticleSection struct {
	Scenario string
	scenario.Article
}

// ScenarioSection is one scenario's settings, tables and charts.
type ScenarioSection struct {
	Name    string
	Pass    bool
	Summary string
	scenario.Section
	Conditions Table
	// ReplayLines are the section's replays as commands, beside what
	// each replays.
	ReplayLines []Pair
}

// VerdictText is the scenario's verdict in its own words, or PASS/FAIL.
func (s ScenarioSection) VerdictText() string {
	switch {
	case s.Verdict != "":
		return s.Verdict
	case s.Pass && s.PassNote != "":
		return "PASS: " + s.PassNote
	case s.Pass:
		return "PASS"
	}
	return "FAIL"
}

// AddReplays renders every scenario's replays with self, the binary that
// renders the report, and the folder's own input copy, which is the input
// the run read.
func (r *Report) AddReplays(self string) {
	for i, s := range r.Scenarios {
		lines := scenario.ReplayCommands(self, filepath.Join(r.Folder, results.InputCopyFile), r.Folder, s.Replays)
		for j, l := range lines {
			r.Scenarios[i].ReplayLines = append(r.Scenarios[i].ReplayLines, Pair{Name: s.Replays[j].What, Value: l})
		}
	}
}

// Table is a plain table of cells.
type Table struct {
	Header []string
	Rows   [][]scenario.Cell
}

// BuildReport arranges a verified folder. The figures shown are the ones
// the records give, which equal the recorded ones when there are no
// findings.
func BuildReport(o *Outcome, reg scenario.Registry) (*Report, error) {
	f := o.Folder
	if f.Results == nil || o.Derived == nil {
		var msgs []string
		for _, x := range o.Findings {
			msgs = append(msgs, x.String())
		}
		return nil, fmt.Errorf("results.json is unreadable: %s", strings.Join(msgs, "; "))
	}
	r := f.Results
	rep := &Report{Folder: f.Dir, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Findings: o.Findings, Notices: o.Notices, CodeChanged: o.CodeChanged}
	switch {
	case len(o.Findings) > 0:
		rep.Verdict = "DOES NOT VERIFY"
	case o.Derived.Pass:
		rep.Verdict = "PASS"
	default:
		rep.Verdict = "FAIL"
	}
	rep.Environment = []Pair{
		{"Go", r.Environment.GoVersion},
		{"OS/arch", r.Environment.GOOS + "/" + r.Environment.GOARCH},
		{"SQLite", r.Environment.SQLiteVersion},
		{"CPUs", fmt.Sprint(r.Environment.NumCPU)},
		{"tool", strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version)},
	}
	if r.Tool.VCSRevision != "" {
		mod := ""
		if r.Tool.VCSModified != nil && *r.Tool.VCSModified {
			mod = " (modified)"
		}
		rep.Environment = append(rep.Environment, Pair{"VCS revision", r.Tool.VCSRevision + mod})
	}
	rep.Made, rep.Environment = made(r, rep.Environment)
	rep.Hashes = []Pair{
		{"input " + r.Inputs.Path + " (sha256; the folder's copy: " + r.Inputs.Copy + ")", r.Inputs.SHA256},
		{"executable (sha256)", r.Code.ExecutableSHA256},
		{"built with", strings.TrimSpace(r.Code.Build.GoVersion + " " + r.Code.Build.Path + " " + r.Code.Build.Version)},
	}
	if r.Code.WorkingTree != nil {
		rep.Hashes = append(rep.Hashes, Pair{fmt.Sprintf("working tree at start, %d files (sha256)", r.Code.WorkingTree.Files), r.Code.WorkingTree.SHA256})
	}
	for _, d := range o.Derived.Scenarios {
		s, ok := reg.Lookup(d.Name)
		if !ok {
			continue
		}
		sec, err := s.Report(d)
		if err != nil {
			rep.Notices = append(rep.Notices, fmt.Sprintf("scenario %s: not arranged: %v", d.Name, err))
			continue
		}
		ss := ScenarioSection{Name: d.Name, Pass: d.Pass, Summary: s.Summary(), Section: sec}
		ss.Conditions = conditionsTable(d)
		rep.Scenarios = append(rep.Scenarios, ss)
		if sec.Article != nil {
			rep.Articles = append(rep.Articles, ArticleSection{Scenario: d.Name, Article: *sec.Article})
		}
	}
	return rep, nil
}

// made says how the run was split, and adds each shard's environment:
// a merged folder reads as one run, made by n machines.
func made(r *results.Results, env []Pair) (string, []Pair) {
	switch {
	case r.Shard != nil:
		return fmt.Sprintf("shard %s: one part of the plan; join the parts with idemlab merge", r.Shard), env
	case len(r.Shards) == 0:
		return "", env
	}
	for _, s := range r.Shards {
		e := s.Environment
		env = append(env, Pair{fmt.Sprintf("shard %d/%d", s.Index, s.Count), fmt.Sprintf("%s, %s/%s, SQLite %s, %d CPUs; %s → %s; %d processes; its own part %s",
			e.GoVersion, e.GOOS, e.GOARCH, e.SQLiteVersion, e.NumCPU, s.StartedAt, s.FinishedAt, s.Processes, verdictOf(s.Pass))})
	}
	return fmt.Sprintf("merged from %d shards", len(r.Shards)), env
}

func verdictOf(pass bool) string {
	if pass {
		return "passed"
	}
	return "failed"
}

// conditionsTable lists every condition with its verdict and, for a miss,
// the fields that differ.
func conditionsTable(s results.ScenarioResult) Table {
	t := Table{Header: []string{"condition", "verdict", "differences (expected → observed)"}}
	for _, c := range s.Conditions {
		var diffs []string
		for _, d := range c.Differences {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", d.Path, d.Expected, d.Observed))
		}
		t.Rows = append(t.Rows, []scenario.Cell{{Text: c.Name}, {Mark: harness.Mark(c.Pass)}, {Text: strings.Join(diffs, "; ")}})
	}
	return t
}
