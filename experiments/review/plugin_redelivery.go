package review

import (
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/experiments/harness"
	"idemlab/experiments/redelivery"
)

func init() {
	register(redelivery.Name, plugin{
		article:       "000.json",
		check:         checkRedelivery,
		deterministic: deterministicRedelivery,
		articleTable:  articleRedelivery,
		cell:          cellRedelivery,
		charts:        chartsRedelivery,
	})
}

// checkRedelivery checks each condition three ways: its expected value
// against the oracle recomputed here, its observed value against the
// observation lines, and each line against its process and its own rows.
func checkRedelivery(f *Folder, s harness.ScenarioResult) []Finding {
	var out []Finding
	add := func(file, fld, format string, args ...any) {
		out = append(out, Finding{File: file, Field: fld, Message: fmt.Sprintf(format, args...)})
	}
	known := map[string]redelivery.Condition{}
	var names []string
	for _, c := range redelivery.Conditions() {
		known[c.Name] = c
		names = append(names, c.Name)
	}
	seen := map[string]bool{}
	for _, cond := range s.Conditions {
		base := field("scenarios", key(s.Name), "conditions", key(cond.Name))
		seen[cond.Name] = true
		rc, ok := known[cond.Name]
		if !ok {
			add(harness.ResultsFile, base+".name", "not a condition of scenario %s (known: %s)", s.Name, strings.Join(names, ", "))
			continue
		}
		var exp, obs []redelivery.Delivery
		if err := decodeStrict(cond.Expected, &exp); err != nil {
			add(harness.ResultsFile, base+".expected", "not a list of deliveries: %v", err)
			continue
		}
		if err := decodeStrict(cond.Observed, &obs); err != nil {
			add(harness.ResultsFile, base+".observed", "not a list of deliveries: %v", err)
			continue
		}
		for _, d := range diffPaths(base+".expected", redelivery.Expect(rc), exp) {
			add(harness.ResultsFile, d.Path, "the oracle computes %s, the file says %s", d.A, d.B)
		}
		if pass, _ := redelivery.Check(exp, obs); pass != cond.Pass {
			add(harness.ResultsFile, base+".pass", "is %v, but expected and observed %s", cond.Pass, map[bool]string{true: "agree", false: "differ"}[pass])
		}
		lines := f.observationsOf(s.Name, cond.Name)
		if len(lines) != len(obs) {
			add(harness.ObservationsFile, "condition "+cond.Name, "%d lines, but %s has %d deliveries at %s.observed", len(lines), harness.ResultsFile, len(obs), base)
		}
		for j, l := range lines {
			line := fmt.Sprintf("line %d", l.N)
			var o redelivery.Observation
			if err := decodeStrict(l.Data, &o); err != nil {
				add(harness.ObservationsFile, line, "not a redelivery observation: %v", err)
				continue
			}
			if j < len(obs) {
				for _, d := range diffPaths(fmt.Sprintf("%s.observed[%d]", base, j), obs[j], o.Delivery) {
					add(harness.ResultsFile, d.Path, "is %s, but %s %s says %s", d.A, harness.ObservationsFile, line, d.B)
				}
			}
			if n := len(o.Rows.FollowUpJobs); n != o.Delivery.FollowUpJobs {
				add(harness.ObservationsFile, line+": observed.follow_up_jobs", "is %d, but rows.follow_up_jobs lists %d rows", o.Delivery.FollowUpJobs, n)
			}
			if n := len(o.Rows.ProcessedEvents); n != o.Delivery.ProcessedEvents {
				add(harness.ObservationsFile, line+": observed.processed_events", "is %d, but rows.processed_events lists %d rows", o.Delivery.ProcessedEvents, n)
			}
			if o.Pattern != rc.Pattern || o.CrashAt != rc.CrashAt {
				add(harness.ObservationsFile, line+": pattern", "%s crashing at %q, but condition %s is %s crashing at %q", o.Pattern, o.CrashAt, cond.Name, rc.Pattern, rc.CrashAt)
			}
			if p, pline, ok := f.process(o.ProcessID); ok {
				if want := fmt.Sprintf("delivery %d", o.Delivery.Delivery); p.Label != want {
					add(harness.ProcessesFile, fmt.Sprintf("line %d: label", pline), "is %q, but observation %s names it as %q", p.Label, line, want)
				}
				if p.Worker != redelivery.Worker {
					add(harness.ProcessesFile, fmt.Sprintf("line %d: worker", pline), "is %q, want %q", p.Worker, redelivery.Worker)
				}
			}
		}
	}
	for _, l := range f.Observations {
		if l.Data["scenario"] != s.Name {
			continue
		}
		if c, _ := l.Data["condition"].(string); !seen[c] {
			add(harness.ObservationsFile, fmt.Sprintf("line %d: condition", l.N), "%q is not a condition of scenario %s in %s", c, s.Name, harness.ResultsFile)
		}
	}
	for _, n := range names {
		if !seen[n] {
			add(harness.ResultsFile, field("scenarios", key(s.Name), "conditions"), "condition %s is missing; every run records all %d", n, len(names))
		}
	}
	return out
}

// redeliveryRun is what a rerun of the scenario must reproduce.
type redeliveryRun struct {
	Settings   any
	Conditions []redeliveryCond
	Processes  []ProcessView
	Rows       []redelivery.Rows
}

type redeliveryCond struct {
	Name     string
	Expected []redelivery.Delivery
	Observed []redelivery.Delivery
	Pass     bool
}

func deterministicRedelivery(f *Folder, s harness.ScenarioResult) (any, error) {
	d := redeliveryRun{Settings: s.Settings, Processes: processViews(f, s.Name)}
	for _, c := range s.Conditions {
		rc := redeliveryCond{Name: c.Name, Pass: c.Pass}
		if err := decodeStrict(c.Expected, &rc.Expected); err != nil {
			return nil, fmt.Errorf("condition %s expected: %w", c.Name, err)
		}
		if err := decodeStrict(c.Observed, &rc.Observed); err != nil {
			return nil, fmt.Errorf("condition %s observed: %w", c.Name, err)
		}
		d.Conditions = append(d.Conditions, rc)
	}
	for _, l := range f.Observations {
		if l.Data["scenario"] != s.Name {
			continue
		}
		var o redelivery.Observation
		if err := decodeStrict(l.Data, &o); err != nil {
			return nil, fmt.Errorf("observation line %d: %w", l.N, err)
		}
		d.Rows = append(d.Rows, o.Rows)
	}
	return d, nil
}

// published000 is testdata/published/000.json.
type published000 struct {
	Article  string   `json:"article"`
	Title    string   `json:"title"`
	Source   string   `json:"source"`
	Scenario string   `json:"scenario"`
	Unit     string   `json:"unit"`
	Columns  []string `json:"columns"`
	Rows     []struct {
		Label     string `json:"label"`
		Condition string `json:"condition"`
		Cells     []struct {
			FollowUpJobs    int `json:"follow_up_jobs"`
			ProcessedEvents int `json:"processed_events"`
			ExitCode        int `json:"exit_code"`
		} `json:"cells"`
	} `json:"rows"`
}

func articleRedelivery(pub []byte, s harness.ScenarioResult) (*ArticleSection, error) {
	var p published000
	if err := json.Unmarshal(pub, &p); err != nil {
		return nil, fmt.Errorf("decode published 000: %w", err)
	}
	a := &ArticleSection{ID: p.Article, Title: p.Title, Source: p.Source, Scenario: s.Name, Unit: p.Unit}
	a.Table.Header = []string{"condition (article's wording)"}
	for _, c := range p.Columns {
		a.Table.Header = append(a.Table.Header, "published: "+c, "reproduced: "+c)
	}
	observed := map[string][]redelivery.Delivery{}
	for _, c := range s.Conditions {
		var obs []redelivery.Delivery
		if decodeStrict(c.Observed, &obs) == nil {
			observed[c.Name] = obs
		}
	}
	inArticle := map[string]bool{}
	for _, row := range p.Rows {
		inArticle[row.Condition] = true
		cells := []Cell{{Text: row.Label}}
		obs, ran := observed[row.Condition]
		for i, pc := range row.Cells {
			pubText := fmt.Sprintf("%d / %d (%d)", pc.FollowUpJobs, pc.ProcessedEvents, pc.ExitCode)
			cells = append(cells, Cell{Text: pubText})
			if !ran || i >= len(obs) {
				cells = append(cells, Cell{Text: "not run", Mark: "✗"})
				a.Cells++
				continue
			}
			o := obs[i]
			text := fmt.Sprintf("%d / %d (%d)", o.FollowUpJobs, o.ProcessedEvents, o.ExitCode)
			match := text == pubText
			cells = append(cells, Cell{Text: text, Mark: harness.Mark(match)})
			a.Cells++
			if match {
				a.Matches++
			}
		}
		a.Table.Rows = append(a.Table.Rows, cells)
	}
	for _, c := range s.Conditions {
		if !inArticle[c.Name] {
			a.Notes = append(a.Notes, fmt.Sprintf("%s is run here but not in the article's table.", c.Name))
		}
	}
	return a, nil
}

func cellRedelivery(v any) string {
	var ds []redelivery.Delivery
	if err := decodeStrict(v, &ds); err != nil {
		return compactLong(v)
	}
	var parts []string
	for _, d := range ds {
		s := fmt.Sprintf("d%d: %d / %d (%d)", d.Delivery, d.FollowUpJobs, d.ProcessedEvents, d.ExitCode)
		if d.CrashedAt != "" {
			s += " crashed at " + d.CrashedAt
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func chartsRedelivery(_ *Folder, s harness.ScenarioResult) ([]Chart, error) {
	var cats []string
	var bars, exps []Series
	maxDeliveries := 0
	type pair struct{ exp, obs []redelivery.Delivery }
	var conds []pair
	for _, c := range s.Conditions {
		var p pair
		if err := decodeStrict(c.Expected, &p.exp); err != nil {
			return nil, fmt.Errorf("condition %s expected: %w", c.Name, err)
		}
		if err := decodeStrict(c.Observed, &p.obs); err != nil {
			return nil, fmt.Errorf("condition %s observed: %w", c.Name, err)
		}
		maxDeliveries = max(maxDeliveries, len(p.obs), len(p.exp))
		conds = append(conds, p)
		cats = append(cats, c.Name)
	}
	for d := 0; d < maxDeliveries; d++ {
		b := Series{Name: fmt.Sprintf("observed after delivery %d", d+1)}
		e := Series{Name: fmt.Sprintf("expected after delivery %d", d+1)}
		for _, p := range conds {
			b.Values = append(b.Values, jobsAt(p.obs, d))
			e.Values = append(e.Values, jobsAt(p.exp, d))
		}
		bars, exps = append(bars, b), append(exps, e)
	}
	svg, err := barChart("follow_up_jobs rows after each delivery", "rows", cats, bars, exps)
	if err != nil {
		return nil, err
	}
	return []Chart{{
		Title: "Follow-up jobs after each delivery", Slug: "redelivery-jobs",
		Caption: "Bars are the rows observed in the SQLite file after each delivery; crosses are the oracle's expectation. A second job after the redelivery is the duplicate the separate-commit pattern allows.",
		SVG:     svg,
	}}, nil
}

func jobsAt(ds []redelivery.Delivery, i int) float64 {
	if i >= len(ds) {
		return 0
	}
	return float64(ds[i].FollowUpJobs)
}
