package claim

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
)

// published is article 003's table, kept in one copy beside the scenario.
//
//go:embed published.json
var published []byte

// Published is article 003's claims and mutants.
type Published struct {
	Article       string `json:"article"`
	Title         string `json:"title"`
	TitleOriginal string `json:"title_original"`
	Unit          string `json:"unit"`
	Cases         []struct {
		Case       string `json:"case"`
		Note       string `json:"note"`
		Winners    *int   `json:"winners,omitempty"`
		Downstream string `json:"downstream,omitempty"`
	} `json:"cases"`
	Mutants []struct {
		Bug    string     `json:"bug"`
		Mutant wc.Variant `json:"mutant"`
		Caught bool       `json:"caught"`
	} `json:"mutants"`
}

// target is a race of a round condition that reproduces one of the
// article's cases.
type target struct {
	round string
	v     wc.Variant
	race  string
}

// cases maps the article's cases, in its wording, to the races that
// reproduce them: the harness's reading of the article, kept here rather
// than in the published data.
var cases = map[string][]target{
	"racers at one moment":                                 {{"1-fresh", wc.Legacy, "A"}, {"1-fresh", wc.TTL, "A"}},
	"one-time claim (DO NOTHING) after the TTL expired":    {{"3-after-ttl", wc.Legacy, "B"}},
	"TTL upsert after the TTL expired":                     {{"3-after-ttl", wc.TTL, "B"}},
	"pre-migration row with claimed_at NULL":               {{"4-null-claimed-at", wc.TTL, "B"}},
	"old schema without claimed_at":                        {{"7-old-schema", wc.TTL, "A"}},
	"exactly at the TTL, with the article's <":             {{"5-at-boundary", wc.TTL, "B"}},
	"1 ms after the TTL":                                   {{"5-past-boundary", wc.TTL, "B"}},
	"within the TTL, caller timestamp 10 years ahead":      {{"6-forged-future", wc.TTL, "B"}},
	"after the TTL, caller timestamp 10 years behind":      {{"6-forged-past", wc.TTL, "B"}},
	"a re-claim after the TTL keeps the downstream fields": {{"8-reclaim-keeps-downstream", wc.TTL, "B"}},
}

// Report arranges a derived result: winners per round, the mutant table,
// and the article's table beside the reproduced figures. Charts wait for
// the charts package; when they come, a round has only the races it ran
// (round 1 has no race B).
// backendRow is the settings row of the database the racers used.
func backendRow(st Settings, ex Extra) [2]string {
	return backend.DatabaseRow(st.Postgres, ex.PostgresReadBack, fmt.Sprintf("journal_mode=%s, synchronous=%s, busy_timeout=%d ms", st.SQLite.JournalMode, st.SQLite.Synchronous, st.SQLite.BusyTimeoutMS))
}

// retriesCell is a condition's retries: SQLITE_BUSY on SQLite, 40001 and
// 40P01 on PostgreSQL.
func retriesCell(st Settings, ex Extra, cond string) string {
	if st.Postgres != nil {
		return fmt.Sprintf("%d/%d", ex.SerializationRetries[cond], ex.DeadlockRetries[cond])
	}
	return fmt.Sprint(ex.BusyRetries[cond])
}

func (Scenario) Report(st Settings, res results.ScenarioResult, ex Extra) (scenario.Section, error) {
	var sec scenario.Section
	sec.Settings = [][2]string{
		{"racers per race", fmt.Sprintf("%d (a pool of %d %s processes serves every race)", st.Workers, st.PoolSize, st.PoolWorker)},
		{"repetitions", fmt.Sprintf("%d per round; %d per round and mutant", st.Repetitions, st.MutantRepetitions)},
		{"TTL", fmt.Sprintf("%d ms, boundary claimed_at %s now - ttl", st.TTLMS, st.Boundary)},
		backendRow(st, ex),
		{"release", fmt.Sprintf("%d races of 2+ racers: wake spread median %d µs, max %d µs; last wake ≤ %d µs after the release", ex.Release.Races, ex.Release.MedianSpreadUS, ex.Release.MaxSpreadUS, ex.Release.MaxWakeUS)},
	}
	t := scenario.Table{
		Title:  "winners per race, every repetition",
		Header: []string{"condition", "want", "got (reps)", "last row", "busy", "ok"},
		Legend: []string{
			"want / got: winners of each race (A sets the row up, B is under test; round 1 races once)",
			"got (reps): each distinct outcome and how many repetitions showed it",
			"last row: count, claimed_at, external_id after the last race; X:now is race X's winner's clock, X:winner its follow-up",
			"busy: SQLITE_BUSY retries after the busy timeout, summed over the racers",
		},
	}
	if st.Postgres != nil {
		t.Header[4] = "40001/40P01"
		t.Legend[3] = "40001/40P01: PostgreSQL's serialization-failure and deadlock retries, summed over the racers; each retry runs the statement again in a new transaction"
	}
	groups := map[string][]Group{}
	for _, c := range res.Conditions {
		if reason, ok := st.notRun(c.Name); ok {
			t.Rows = append(t.Rows, []string{c.Name, "n/a", "n/a", cut("not applicable: "+reason, 24), "", harness.Mark(c.Pass)})
			continue
		}
		var exp, obs []Group
		if json.Unmarshal(c.Expected, &exp) != nil || json.Unmarshal(c.Observed, &obs) != nil {
			continue
		}
		groups[c.Name] = obs
		want := ""
		if len(exp) > 0 {
			want = Winners(exp[0].Outcome)
		}
		var got []string
		for _, g := range obs {
			got = append(got, fmt.Sprintf("%s (%d)", Winners(g.Outcome), len(g.Repetitions)))
		}
		last := ""
		if len(obs) > 0 && len(obs[0].Outcome) > 0 {
			last = rowCell(obs[0].Outcome[len(obs[0].Outcome)-1].Row)
		}
		t.Rows = append(t.Rows, []string{c.Name, want, strings.Join(got, "; "), last, retriesCell(st, ex, c.Name), harness.Mark(c.Pass)})
	}
	sec.Tables = append(sec.Tables, t)
	if st.User != nil {
		sec.Settings = append(sec.Settings, userSettings(st.User)...)
		sec.Tables = append(sec.Tables, userTable(st, res, ex))
	}
	if ex.Mutants != nil {
		sec.Tables = append(sec.Tables, mutantTable(st, ex.Mutants))
	}
	if st.User != nil {
		// The article's table is about its own two claims, not the user's.
		ch, err := winnersChart(res, st)
		sec.Charts = ch
		return sec, err
	}
	art, err := article(groups, ex.Mutants)
	if err != nil {
		return sec, err
	}
	sec.Article = art
	ch, err := winnersChart(res, st)
	if err != nil {
		return sec, err
	}
	sec.Charts = ch
	return sec, nil
}

// mutantTable has one column per round of the TTL claim, so that all
// rounds fit beside each other: x where the round killed the mutant.
func mutantTable(st Settings, mt *MutantTable) scenario.Table {
	var ids []string
	for _, r := range st.Rounds {
		if r.hasKind(wc.TTL) {
			ids = append(ids, r.ID)
		}
	}
	short := ShortIDs(ids)
	t := scenario.Table{
		Title:  fmt.Sprintf("mutants, %d repetitions of every TTL round each", mt.Repetitions),
		Header: append(append([]string{"mutant"}, short...), "killed"),
		Legend: []string{"x: the round's outcome differed from the TTL claim's oracle, which kills the mutant; each must be killed"},
	}
	var legend []string
	for i, id := range ids {
		legend = append(legend, short[i]+" = "+id)
	}
	for len(legend) > 0 {
		n := min(4, len(legend))
		t.Legend = append(t.Legend, "rounds: "+strings.Join(legend[:n], ", "))
		legend = legend[n:]
	}
	for _, m := range mt.Rows {
		row := []string{string(m.Mutant)}
		for _, id := range ids {
			cell := "."
			for _, k := range m.KilledBy {
				if k == id {
					cell = "x"
				}
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, append(row, harness.Mark(m.Killed)))
	}
	return t
}

// ShortIDs shortens round ids to their number, adding the first letter
// where ids of one number differ ("5-at-boundary", "5-past-boundary" give
// "5a", "5p").
func ShortIDs(ids []string) []string {
	num := func(id string) string { n, _, _ := strings.Cut(id, "-"); return n }
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = num(id)
		for j, other := range ids {
			if j == i || num(other) != num(id) {
				continue
			}
			k := 0
			for k < len(id) && k < len(other) && id[k] == other[k] {
				k++
			}
			if k < len(id) {
				out[i] = num(id) + id[k:k+1]
			}
		}
	}
	return out
}

func rowCell(r RowSummary) string {
	if !r.Present {
		return "no row"
	}
	return fmt.Sprintf("%d, %s, %s", r.Count, r.ClaimedAt, r.ExternalID)
}

func article(groups map[string][]Group, mutants *MutantTable) (*scenario.Article, error) {
	var p Published
	if err := scenario.DecodeStrict(published, &p); err != nil {
		return nil, fmt.Errorf("published table of article 003: %w", err)
	}
	a := &scenario.Article{
		ID: p.Article, Title: p.Title + " (" + p.TitleOriginal + ")", Unit: p.Unit,
		Header: []string{"case (article's wording)", "reproduced by", "published", "reproduced"},
	}
	judge := func(cs, by, pub, got string) {
		a.Cells++
		if got == pub {
			a.Matches++
		}
		a.Rows = append(a.Rows, []scenario.Cell{{Text: cs}, {Text: by}, {Text: pub}, {Text: got, Mark: harness.Mark(got == pub)}})
	}
	for _, pc := range p.Cases {
		ts, ok := cases[pc.Case]
		if !ok {
			a.Notes = append(a.Notes, fmt.Sprintf("The article's case %q has no round here.", pc.Case))
			continue
		}
		for _, t := range ts {
			name := RoundCondition(t.round, t.v)
			pub := pc.Downstream
			if pc.Winners != nil {
				pub = winnersText(*pc.Winners)
			}
			got := raceValues(groups[name], t.race, func(o RaceOutcome) string {
				if pc.Winners != nil {
					return winnersText(o.Winners)
				}
				if o.Row.ExternalID == "A:winner" && o.Row.Classification != ValueNull {
					return "kept"
				}
				return fmt.Sprintf("overwritten (external_id %s, classification %s)", o.Row.ExternalID, o.Row.Classification)
			})
			judge(pc.Case, name+" race "+t.race, pub, got)
		}
	}
	for _, pm := range p.Mutants {
		got, by := "not run", string(pm.Mutant)
		if mutants != nil {
			for _, r := range mutants.Rows {
				if r.Mutant == pm.Mutant {
					got = "survived"
					if r.Killed {
						got = "caught"
						by += " (" + strings.Join(r.KilledBy, ", ") + ")"
					}
				}
			}
		}
		judge("mutation: "+pm.Bug, by, map[bool]string{true: "caught", false: "survived"}[pm.Caught], got)
	}
	a.Notes = append(a.Notes, "Winners are shown for every repetition: one value when all agree, every value seen otherwise. Rounds 5 and 6 follow the article's rules (its SQL's <, and the server's clock over the caller's timestamp).")
	return a, nil
}

func winnersText(n int) string {
	if n == 1 {
		return "1 winner"
	}
	return fmt.Sprintf("%d winners", n)
}

// raceValues renders one race's figure over every repetition.
func raceValues(gs []Group, race string, f func(RaceOutcome) string) string {
	var vals []string
	seen := map[string]bool{}
	for _, g := range gs {
		for _, o := range g.Outcome {
			if o.Race != race {
				continue
			}
			if v := f(o); !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
	}
	if len(vals) == 0 {
		return "not run"
	}
	return strings.Join(vals, " / ")
}
