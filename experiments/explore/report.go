package explore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"idemlab/experiments/engine"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/deliver"
)

// Matrix is the sweep as a grid: one row per crash point (in discovery
// order, patterns in turn), one column per pattern. It is the data of the
// heat map the figure package will draw.
type Matrix struct {
	Points   []string `json:"points"`
	Patterns []string `json:"patterns"`
	// Cells[i][j] is the outcome at point i for pattern j; "" when the
	// pattern does not pass that point.
	Cells [][]string `json:"cells"`
	// Violating[i][j] says the outcome broke an invariant.
	Violating [][]bool `json:"violating"`
}

// SweepMatrix builds the matrix from a derived result's sweep conditions.
func SweepMatrix(res results.ScenarioResult) (Matrix, error) {
	var m Matrix
	type col struct {
		name string
		obs  deliver.SweepObserved
	}
	var cols []col
	for _, c := range res.Conditions {
		var e Expected
		if err := json.Unmarshal(c.Expected, &e); err != nil {
			return m, fmt.Errorf("condition %s: %w", c.Name, err)
		}
		if e.Kind != KindSweep {
			continue
		}
		var o deliver.SweepObserved
		if err := json.Unmarshal(c.Observed, &o); err != nil {
			return m, fmt.Errorf("condition %s: %w", c.Name, err)
		}
		cols = append(cols, col{strings.TrimSuffix(c.Name, "/"+KindSweep), o})
		for _, p := range o.Points {
			if !slices.Contains(m.Points, p) {
				m.Points = append(m.Points, p)
			}
		}
	}
	for _, c := range cols {
		m.Patterns = append(m.Patterns, c.name)
	}
	for _, p := range m.Points {
		row := make([]string, len(cols))
		bad := make([]bool, len(cols))
		for j, c := range cols {
			for _, po := range c.obs.Outcomes {
				if po.Point == p {
					row[j], bad[j] = po.Outcome, len(po.Violations) > 0
				}
			}
		}
		m.Cells = append(m.Cells, row)
		m.Violating = append(m.Violating, bad)
	}
	return m, nil
}

// Report arranges the result: what it found, in sentences, then the
// sweep matrix, the random trials, the races, the takeovers and the
// replayable violations, with the commands that replay them.
func (Scenario) Report(st Settings, all results.ScenarioResult, extra Extra) (scenario.Section, error) {
	sec := scenario.Section{Verdict: scenario.ModelVerdict(all.Pass), Settings: settingsRows(st, all.Parallel)}
	files, res, err := articleResult(all)
	if err != nil {
		return sec, err
	}
	lead, err := Lead(st, res, extra)
	if err != nil {
		return sec, err
	}
	sec.Lead = lead
	m, err := SweepMatrix(res)
	if err != nil {
		return sec, err
	}
	rt, bt, err := trialTables(res)
	if err != nil {
		return sec, err
	}
	tt, err := takeoverTable(res)
	if err != nil {
		return sec, err
	}
	// A replay of one trial runs no sweep, and one of the sweep no random
	// trial: a table without rows is left out.
	lt, err := levelTable(st, res)
	if err != nil {
		return sec, err
	}
	for _, t := range []scenario.Table{MatrixTable(m), lt, rt, bt, tt} {
		if len(t.Rows) > 0 {
			sec.Tables = append(sec.Tables, t)
		}
	}
	if len(extra.LateSends) > 0 {
		sec.Tables = append(sec.Tables, deliver.LateSendsTable(extra.LateSends))
	}
	if len(extra.Violations) > 0 {
		sec.Tables = append(sec.Tables, violationsTable(extra.Violations))
		sec.Replays = replays(st, extra.Violations, 3)
	}
	ch, err := sweepChart(m)
	if err != nil {
		return sec, err
	}
	sec.Charts = ch
	return sec, reportArticles(st, files, extra, &sec)
}

// parallelWords is how many trials ran at once; a merged folder records
// none, since each shard ran as many as its machine did.
func parallelWords(n int) string {
	if n == 0 {
		return "not recorded (each shard ran as many as its machine did)"
	}
	return fmt.Sprint(n)
}

// settingsRows are the settings as the report shows them, with the trials
// run at once: parallel, as results.json records it beside the settings,
// or an older folder's settings.
func settingsRows(st Settings, parallel int) [][2]string {
	if st.Backend != "" {
		return [][2]string{
			{"event", st.EventID + " / " + st.JobKey},
			{"backend", fmt.Sprintf("%s, synchronous_commit=%s", st.Backend, st.SynchronousCommit)},
			{"isolation levels", strings.Join(st.Isolations, ", ")},
			{"races", fmt.Sprintf("%d rounds each of %v racers released at once, no kills; batch items %d", st.Rounds, st.Racers, st.Items)},
			{"racer attempts", fmt.Sprintf("at most %d per racer (40001 and 40P01 run again)", st.MaxAttempts)},
		}
	}
	rows := [][2]string{
		{"event", st.EventID + " / " + st.JobKey},
		{"seed", fmt.Sprint(st.Seed)},
		{"random trials per pattern", fmt.Sprintf("%d (%d crash at a seeded hit, %d killed after a seeded delay)", st.Trials, st.HitTrials, st.KillTrials)},
		{"races", fmt.Sprintf("%d rounds each of %v racers, with and without kills", st.Rounds, st.Racers)},
		{"parallel trials", parallelWords(max(parallel, st.Parallel))},
		{"SQLite", fmt.Sprintf("journal_mode=%s, synchronous=%s, busy_timeout=%d ms", st.SQLite.JournalMode, st.SQLite.Synchronous, st.SQLite.BusyTimeoutMS)},
	}
	if st.OnlyTrial >= 0 {
		rows = append(rows, [2]string{"replaying", fmt.Sprintf("trial %d only", st.OnlyTrial)})
	}
	return rows
}

// trialTables are the random trials' outcomes and how their kills and
// racers ended.
func trialTables(res results.ScenarioResult) (rt, bt scenario.Table, err error) {
	rt = scenario.Table{
		Title:  "seeded random trials and races: outcomes after the redelivery",
		Header: []string{"condition", "trials", "outcomes", "violating", "ok"},
		Legend: []string{
			"outcomes: count per outcome; violating: trials that broke an invariant, and their share",
			"ok: ✓ when every outcome is in the oracle's allowed set",
			"timing-*: kills and races depend on OS scheduling and are not replayable",
		},
	}
	bt = scenario.Table{
		Title:  "kills and racers: how the scheduled SIGKILLs landed and how racers ended",
		Header: []string{"condition", "kills", "landed", "racer ends", "busy", "40001/40P01", "retries"},
		Legend: []string{
			"landed: kills that ended a running worker (the rest fired after it finished)",
			"racer ends: ack, killed, or the class of the error it reported (constraint: lost the race); a journal run: completed or needs_review",
			"busy: SQLITE_BUSY errors the racers saw; 40001/40P01: PostgreSQL's serialization failures and deadlocks run again (a delivery, or a journal mark); retries: deliveries tried again",
		},
	}
	for _, c := range res.Conditions {
		rc, err := readCondition(c)
		if err != nil {
			return rt, bt, err
		}
		var trials, violating int
		var hist map[string]int
		switch rc.kind {
		case KindHits:
			trials, violating, hist = rc.hits.Trials, rc.hits.ViolatingTrials, rc.hits.Histogram
		case KindKill, KindRace:
			o := rc.timing
			trials, violating, hist = o.Trials, o.Timing.ViolatingTrials, o.Timing.Histogram
			bt.Rows = append(bt.Rows, []string{c.Name, fmt.Sprint(o.Timing.Kills), fmt.Sprint(o.Timing.Landed), engine.Counts(o.Timing.RacerEnds, "%s %d"), fmt.Sprint(o.Timing.BusyErrors), fmt.Sprint(o.Timing.SerializationErrors), fmt.Sprint(o.Timing.Retries)})
		default:
			continue
		}
		rt.Rows = append(rt.Rows, []string{c.Name, fmt.Sprint(trials), engine.Counts(hist, "%s %d"), fmt.Sprintf("%d (%s)", violating, percent(violating, trials)), harness.Mark(c.Pass)})
	}
	return rt, bt, nil
}

// levelTable is the races on PostgreSQL side by side, one column per
// isolation level: in how many rounds the pattern did not hold (a second
// job, or a second send of an item), the outcomes' range, and the
// serialization failures run again. It has no rows on SQLite.
func levelTable(st Settings, res results.ScenarioResult) (scenario.Table, error) {
	t := scenario.Table{
		Title:  "concurrent deliveries on PostgreSQL: K racers released at once, by isolation level",
		Header: []string{"pattern", "K"},
		Legend: []string{
			"each cell: rounds that broke an invariant of all rounds; the outcomes seen; 40001/40P01 run again; ✓ when every outcome is one the oracle allows",
		},
	}
	if st.Backend == "" {
		return t, nil
	}
	for _, l := range st.Isolations {
		t.Header = append(t.Header, levelName(l))
	}
	byName := engine.ByName(res)
	for _, ps := range st.Patterns {
		for _, k := range st.Racers {
			row := []string{ps.Name, fmt.Sprint(k)}
			for _, l := range st.Isolations {
				c, ok := byName[fmt.Sprintf("%s/%s/%s-%d", ps.Name, l, KindRace, k)]
				if !ok {
					row = append(row, "-")
					continue
				}
				v, err := readCondition(c)
				if err != nil {
					return t, err
				}
				o := v.timing
				outs := engine.CountsIn(byCount(slices.Sorted(maps.Keys(o.Timing.Histogram))), o.Timing.Histogram, "%s ×%d", ", ")
				row = append(row, fmt.Sprintf("%d/%d: %s; %d retried %s", o.Timing.ViolatingTrials, o.Trials, outs, o.Timing.SerializationErrors, harness.Mark(c.Pass)))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t, nil
}

// byCount orders outcome names by the number they end in, so that
// duplicate-10 comes after duplicate-9; names without one keep their place
// first.
func byCount(outs []string) []string {
	n := func(o string) int {
		i := strings.LastIndex(o, "-")
		v, err := strconv.Atoi(o[i+1:])
		if i < 0 || err != nil {
			return -1
		}
		return v
	}
	slices.SortStableFunc(outs, func(a, b string) int { return n(a) - n(b) })
	return outs
}

func takeoverTable(res results.ScenarioResult) (scenario.Table, error) {
	tt := scenario.Table{
		Title:  "lease takeover: holder paused at each point, successor takes over, holder runs on",
		Header: []string{"condition", "points", "violating", "lease lost", "stale refused", "polls", "ok"},
		Legend: []string{
			"violating: points where the stale holder sent or wrote as a non-holder (an invariant broke)",
			"lease lost: stale holders that found their generation superseded and stopped",
			"stale refused: sends the receiver refused and logged as stale; polls: successor waits (timing)",
		},
	}
	for _, c := range res.Conditions {
		if !strings.Contains(c.Name, "/"+KindTakeover) {
			continue
		}
		var o deliver.TakeoverObserved
		if err := json.Unmarshal(c.Observed, &o); err != nil {
			return tt, fmt.Errorf("condition %s: %w", c.Name, err)
		}
		tt.Rows = append(tt.Rows, []string{c.Name, fmt.Sprint(len(o.Points)), fmt.Sprint(len(o.ViolatingPoints)), fmt.Sprint(o.LeaseLost), fmt.Sprint(o.StaleRefused), fmt.Sprint(o.Timing.SuccessorPolls), harness.Mark(c.Pass)})
	}
	return tt, nil
}

// violationsTable lists the first ten replayable violations, one row per
// trial and invariant.
func violationsTable(vs []deliver.ViolationRecord) scenario.Table {
	vt := scenario.Table{
		Title:  "replayable violations (first 10 trials and invariants)",
		Header: []string{"condition", "trial", "point", "k", "invariant"},
		Legend: []string{"the commands after the tables replay them"},
	}
	seen := map[string]bool{}
	for _, v := range vs {
		key := fmt.Sprint(v.Condition, v.Trial, v.Invariant)
		if seen[key] || len(vt.Rows) == 10 {
			continue
		}
		seen[key] = true
		vt.Rows = append(vt.Rows, []string{v.Condition, fmt.Sprint(v.Trial), v.Point, fmt.Sprint(v.K), v.Invariant})
	}
	return vt
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// patternAbbrev shortens pattern names for the matrix's header.
var patternAbbrev = map[string]string{
	"separate-commit": "sep-commit", "single-transaction": "single-tx", "batch-journal": "journal",
	"batch-rerun-all": "rerun-all", "claim-ttl": "claim-ttl", "lease-batch": "lease",
}

// pointGroup folds a per-item point ("before-send:item-004") into its
// kind ("before-send:*"); other points stand alone.
func pointGroup(p string) string {
	if kind, item, ok := strings.Cut(p, ":"); ok && strings.HasPrefix(item, "item-") {
		return kind + ":*"
	}
	return p
}

// cellAbbrev shortens an outcome for the matrix.
func cellAbbrev(o string) string {
	o = strings.Replace(o, "duplicates-", "+", 1)
	o = strings.Replace(o, "duplicate-", "dup-", 1)
	return strings.Replace(o, "done-by-", "by-", 1)
}

// MatrixTable renders the sweep matrix for a terminal: per-item points
// grouped by kind, each grouped cell saying how many of its points broke
// an invariant, so fifty items take two rows and the table stays within
// 100 columns.
func MatrixTable(m Matrix) scenario.Table {
	t := scenario.Table{
		Title: "crash-point sweep: outcome after a crash at each point and the recovery",
		Legend: []string{
			"clean: the invariants' outcome (1 job; every item sent once); dup-N: N jobs for one event",
			"by-X: X wrote the claim's downstream fields; :* rows group the per-item points of a batch",
			"✗ k/n: k of the n points broke an invariant, outcomes (+N: N extra sends) after it",
			"·: the pattern does not pass this point; sep-commit, single-tx: the redelivery patterns",
		},
	}
	t.Header = []string{"point"}
	for _, p := range m.Patterns {
		if a, ok := patternAbbrev[p]; ok {
			p = a
		}
		t.Header = append(t.Header, p)
	}
	var groups []string
	rows := map[string][]int{}
	for i, p := range m.Points {
		g := pointGroup(p)
		if _, ok := rows[g]; !ok {
			groups = append(groups, g)
		}
		rows[g] = append(rows[g], i)
	}
	for _, g := range groups {
		row := []string{g}
		for j := range m.Patterns {
			var outs, badOuts []string
			n, bad := 0, 0
			for _, i := range rows[g] {
				c := m.Cells[i][j]
				if c == "" {
					continue
				}
				n++
				a := cellAbbrev(c)
				if m.Violating[i][j] {
					bad++
					if !slices.Contains(badOuts, a) {
						badOuts = append(badOuts, a)
					}
				} else if !slices.Contains(outs, a) {
					outs = append(outs, a)
				}
			}
			if bad > 0 {
				outs = badOuts
			}
			switch {
			case n == 0:
				row = append(row, "·")
			case bad == 0:
				row = append(row, strings.Join(outs, ","))
			case len(rows[g]) == 1:
				row = append(row, outs[0]+" ✗")
			default:
				row = append(row, fmt.Sprintf("✗ %d/%d %s", bad, n, spanOf(outs)))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// spanOf shows several outcomes as their first and last.
func spanOf(outs []string) string {
	if len(outs) <= 1 {
		return strings.Join(outs, "")
	}
	return outs[0] + ".." + outs[len(outs)-1]
}
