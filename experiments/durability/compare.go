package durability

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// rowCrash names the row a pattern's crash of the storage stands in on
// either backend: SQLite's power cut and PostgreSQL's server crash, each
// the case where what the database acknowledged meets what reached the
// disk, so the two matrices read as one.
const rowCrash = "power cut or server crash"

// Compare says each condition in a few words for a report that sets a
// SQLite folder beside a PostgreSQL one. SQLite's names carry the journal
// mode and synchronous level, PostgreSQL's synchronous_commit, so every
// condition is placed in the row of its pattern and crash ("…/kill", or
// rowCrash for SQLite's power cut and PostgreSQL's server crash) with the
// setting it ran under; a cell lists the settings with their trials'
// outcomes.
func (Scenario) Compare(st Settings, res results.ScenarioResult, _ Extra) scenario.Compared {
	c := scenario.Compared{
		Database: durabilityDatabase(st),
		Outcomes: map[string]string{},
		Rows:     map[string]scenario.Row{},
		Legend:   "durability: per setting, the work the crash took back at each point after the redelivery or resume (lost ACKed rows; redone after rollback: a crashed worker's commit taken back and done again; done twice; work missing), over the condition's trials; the crash row is SQLite's power cut beside PostgreSQL's SIGKILL of the whole server",
	}
	conds := map[string]Condition{}
	for _, cond := range st.Conditions {
		conds[cond.Name] = cond
	}
	for _, cr := range res.Conditions {
		cond, ok := conds[cr.Name]
		if !ok {
			continue
		}
		c.Rows[cr.Name] = scenario.Row{Key: compareRow(cond), Setting: cond.SettingName()}
		var trials map[string]Trial
		if json.Unmarshal(cr.Observed, &trials) == nil {
			c.Outcomes[cr.Name] = trialWords(trials, st.pointOrder(cond))
		}
	}
	return c
}

// compareRow is the row a condition stands in: its pattern and its crash,
// whatever the backend's settings.
func compareRow(c Condition) string {
	if c.Kind == KindKill {
		return c.Pattern + "/" + KindKill
	}
	return c.Pattern + "/" + rowCrash
}

// durabilityDatabase names the database: the setting varies by condition
// and every normal run's worker read its own back (the fold checks it).
func durabilityDatabase(st Settings) string {
	if st.Backend == "" {
		return "SQLite, journal_mode/synchronous per condition, as each worker read them back"
	}
	w := fmt.Sprintf("PostgreSQL, %s, synchronous_commit per condition, as each session read them back", st.Isolation)
	for _, k := range slices.Sorted(maps.Keys(st.ServerSettings)) {
		w += fmt.Sprintf("; %s=%s", k, st.ServerSettings[k])
	}
	return w
}

// pointOrder lists the points of c in the order its trials run.
func (s Settings) pointOrder(c Condition) []string {
	pts := append([]string{PointACK}, Points(c.Pattern, s.Items)...)
	if !c.OnServer() {
		pts = append(pts, ExtraPoints(c.Pattern)...)
	}
	return pts
}

// compareTagWords says a tag in the comparison's words; lost-acked is said with
// its row count, so it is not here.
var compareTagWords = map[string]string{
	TagCorrupt:        "corrupt",
	TagRolledBack:     "redone after rollback",
	TagLostClaim:      "claim lost and redone",
	TagLostDownstream: "downstream fields lost",
	TagDuplicate:      "done twice",
	TagMissing:        "work missing",
	TagError:          "a later worker failed",
}

// trialWords says a condition's trials in a few words: "no loss in 4
// trials", or each outcome other than ok with the points that showed it,
// "lost 2 ACKed rows at ack; redone after rollback at after-job-commit (4
// trials)", where a loss is the rows each of those trials lost. A torn
// trial's seed is left out of its point; points run in order, then any
// other in name order.
func trialWords(trials map[string]Trial, order []string) string {
	type group struct {
		outcome string
		lost    int
		points  []string
	}
	var groups []group
	loss := false
	for _, key := range orderedKeys(trials, order) {
		tr := trials[key]
		if tr.Outcome == OutcomeOK {
			continue
		}
		tags := strings.Split(tr.Outcome, "+")
		lost := 0
		if slices.Contains(tags, TagLostAcked) {
			lost = tr.RowsLost
		}
		point, _, _ := strings.Cut(key, "#")
		k := slices.IndexFunc(groups, func(g group) bool { return g.outcome == tr.Outcome && g.lost == lost })
		if k < 0 {
			groups = append(groups, group{outcome: tr.Outcome, lost: lost})
			k = len(groups) - 1
		}
		if !slices.Contains(groups[k].points, point) {
			groups[k].points = append(groups[k].points, point)
		}
		loss = loss || slices.Contains(tags, TagLostAcked) || slices.Contains(tags, TagLostDownstream)
	}
	n := fmt.Sprintf("%d %s", len(trials), scenario.Plural(len(trials), "trial", "trials"))
	if len(groups) == 0 {
		return "no loss in " + n
	}
	var parts []string
	if !loss {
		parts = append(parts, "no loss")
	}
	for _, g := range groups {
		parts = append(parts, outcomeWords(g.outcome, g.lost)+" at "+strings.Join(g.points, ", "))
	}
	return strings.Join(parts, "; ") + " (" + n + ")"
}

// outcomeWords says an outcome's tags; lost is the ACKed rows each of
// its trials lost.
func outcomeWords(outcome string, lost int) string {
	var out []string
	for _, t := range strings.Split(outcome, "+") {
		switch w, ok := compareTagWords[t]; {
		case t == TagLostAcked && lost == 1:
			out = append(out, "lost 1 ACKed row")
		case t == TagLostAcked:
			out = append(out, fmt.Sprintf("lost %d ACKed rows", lost))
		case ok:
			out = append(out, w)
		default:
			out = append(out, t)
		}
	}
	return strings.Join(out, " + ")
}

// orderedKeys lists the trial keys by their point's place in order, then
// the others by name.
func orderedKeys(trials map[string]Trial, order []string) []string {
	rank := func(key string) int {
		point, _, _ := strings.Cut(key, "#")
		if i := slices.Index(order, point); i >= 0 {
			return i
		}
		return len(order)
	}
	keys := slices.Sorted(maps.Keys(trials))
	slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
	return keys
}
