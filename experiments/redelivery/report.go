package redelivery

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// published is the article's table, kept in one copy beside the scenario.
//
//go:embed published.json
var published []byte

// Published is article 000's table of row counts.
type Published struct {
	Article       string   `json:"article"`
	Title         string   `json:"title"`
	TitleOriginal string   `json:"title_original"`
	Unit          string   `json:"unit"`
	Columns       []string `json:"columns"`
	Rows          []struct {
		Label     string `json:"label"`
		Condition string `json:"condition"`
		Cells     []struct {
			FollowUpJobs    int `json:"follow_up_jobs"`
			ProcessedEvents int `json:"processed_events"`
			ExitCode        int `json:"exit_code"`
		} `json:"cells"`
	} `json:"rows"`
}

// Report arranges a derived result: the condition table, the article's
// table beside it, and the jobs chart.
func (Scenario) Report(st Settings, res results.ScenarioResult, x Extra) (scenario.Section, error) {
	var sec scenario.Section
	sec.Settings = [][2]string{
		{"event", st.EventID}, {"job key", st.JobKey},
		{"deliveries per condition", fmt.Sprint(st.Deliveries)},
	}
	if st.Postgres == nil {
		sec.Settings = append(sec.Settings, [2]string{"SQLite", fmt.Sprintf("journal_mode=%s, synchronous=%s, busy_timeout=%d ms", st.SQLite.JournalMode, st.SQLite.Synchronous, st.SQLite.BusyTimeoutMS)})
	} else {
		sec.Settings = append(sec.Settings, [2]string{"PostgreSQL", backend.Describe(*st.Postgres, x.PostgresReadBack)})
	}
	if b := st.Broker; b != nil {
		where := "a JetStream server per condition (idemlab-nats)"
		if b.URL != "" {
			where = b.URL + " (yours: no kill, no restart)"
		}
		sec.Settings = append(sec.Settings, [2]string{"broker", fmt.Sprintf("%s, %s; ack_wait %d ms, max_deliver %d, duplicate_window %d ms, fetch_wait %d ms", b.Name, where, b.AckWaitMS, b.MaxDeliver, b.DuplicateWindowMS, b.FetchWaitMS)})
		for _, l := range st.BrokerLeftOut {
			sec.Settings = append(sec.Settings, [2]string{"not run", l})
		}
	}
	t := scenario.Table{
		Title:  "rows follow_up_jobs / processed_events (exit code) after each delivery",
		Header: []string{"condition", "delivery 1", "delivery 2", "ok"},
		Legend: []string{
			"delivery N: jobs / processed records the parent read from the file after delivery N exited, and its exit code (17 = crashed on purpose)",
			"ok: ✓ when every delivery matches the oracle; a miss shows \"want X\"",
		},
	}
	observed := map[string][]Delivery{}
	for _, c := range res.Conditions {
		var exp, obs []Delivery
		json.Unmarshal(c.Expected, &exp)
		json.Unmarshal(c.Observed, &obs)
		observed[c.Name] = obs
		row := []string{c.Name}
		for i := 0; i < Deliveries; i++ {
			row = append(row, cell(exp, obs, i))
		}
		t.Rows = append(t.Rows, append(row, harness.Mark(c.Pass)))
	}
	sec.Tables = []scenario.Table{t}
	art, err := article(observed)
	if err != nil {
		return sec, err
	}
	sec.Article = art
	chart, err := jobsChart(res)
	if err != nil {
		return sec, err
	}
	sec.Charts = append(sec.Charts, chart...)
	return sec, nil
}

func text(d Delivery) string {
	s := fmt.Sprintf("%d / %d (%d)", d.FollowUpJobs, d.ProcessedEvents, d.ExitCode)
	if c := d.AfterServerCrash; c != nil {
		s += fmt.Sprintf(", server crash → %d / %d", c.FollowUpJobs, c.ProcessedEvents)
	}
	return s
}

func cell(exp, obs []Delivery, i int) string {
	if i >= len(obs) {
		return "-"
	}
	s := text(obs[i])
	if i < len(exp) && text(exp[i]) != s {
		s += " want " + text(exp[i])
	}
	return s
}

func article(observed map[string][]Delivery) (*scenario.Article, error) {
	var p Published
	if err := scenario.DecodeStrict(published, &p); err != nil {
		return nil, fmt.Errorf("published table of article 000: %w", err)
	}
	a := &scenario.Article{ID: p.Article, Title: p.Title + " (" + p.TitleOriginal + ")", Unit: p.Unit}
	a.Header = []string{"condition (article's wording)"}
	for _, c := range p.Columns {
		a.Header = append(a.Header, "published: "+c, "reproduced: "+c)
	}
	inArticle := map[string]bool{}
	for _, row := range p.Rows {
		inArticle[row.Condition] = true
		cells := []scenario.Cell{{Text: row.Label}}
		obs, ran := observed[row.Condition]
		for i, pc := range row.Cells {
			pub := fmt.Sprintf("%d / %d (%d)", pc.FollowUpJobs, pc.ProcessedEvents, pc.ExitCode)
			cells = append(cells, scenario.Cell{Text: pub})
			a.Cells++
			if !ran || i >= len(obs) {
				cells = append(cells, scenario.Cell{Text: "not run", Mark: "✗"})
				continue
			}
			got := text(obs[i])
			cells = append(cells, scenario.Cell{Text: got, Mark: harness.Mark(got == pub)})
			if got == pub {
				a.Matches++
			}
		}
		a.Rows = append(a.Rows, cells)
	}
	var extra []string
	for name := range observed {
		if !inArticle[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		a.Notes = append(a.Notes, "Run here but not in the article's table: "+strings.Join(sorted(extra), ", ")+".")
	}
	return a, nil
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
