package durability

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// cell is one trial as the matrix shows it: one pattern's point under one
// condition (and, under the torn mode, one seed), its outcome and whether
// it ended as the model says.
type cell struct {
	cond Condition
	// point is the trial's point, key its key (the point, with the seed
	// under the torn mode).
	point, key string
	outcome    string
	allowed    []string
	match      bool
}

// name is how the conditions table and the sentences name the trial.
func (c cell) name() string { return c.cond.Name + " " + c.key }

func (c cell) ok() bool { return c.match }

func (c cell) has(tag string) bool { return slices.Contains(strings.Split(c.outcome, "+"), tag) }

// safe says nothing was lost, duplicated or missing: at most a crashed
// worker's commit rolled back, to be redone.
func (c cell) safe() bool { return c.outcome == OutcomeOK || c.outcome == TagRolledBack }

// setting is the cell's journal_mode/synchronous, as "DELETE/FULL".
func (c cell) setting() string { return c.cond.SettingName() }

// cellsOf lists the trials of a derived result: conditions in the order of
// the settings, trials in the model's order, then any trial the model
// lacks (which the check fails).
func cellsOf(st Settings, res results.ScenarioResult) []cell {
	byName := engine.ByName(res)
	var out []cell
	for _, cond := range st.Conditions {
		cr, ok := byName[cond.Name]
		if !ok {
			continue
		}
		var exp map[string]Want
		var obs map[string]Trial
		if json.Unmarshal(cr.Expected, &exp) != nil || json.Unmarshal(cr.Observed, &obs) != nil {
			continue
		}
		order, err := st.ModelOrder(cond)
		if err != nil {
			continue
		}
		var keys, points []string
		for _, tr := range order {
			keys, points = append(keys, st.TrialKey(cond, tr.Point, tr.Seed)), append(points, tr.Point)
		}
		for _, k := range slices.Sorted(maps.Keys(obs)) {
			if !slices.Contains(keys, k) {
				pt, _, _ := strings.Cut(k, "#")
				keys, points = append(keys, k), append(points, pt)
			}
		}
		for i, k := range keys {
			t, ok := obs[k]
			if !ok {
				continue
			}
			w, known := exp[k]
			if any, ok := anySyncKey(k); ok && !known {
				w, known = exp[any] // a cut at a mount's fsync, any N (Compare)
			}
			match := known && len(Mismatch(k, w, t)) == 0
			out = append(out, cell{cond: cond, point: points[i], key: k, outcome: t.Outcome, allowed: w.Allowed(t), match: match})
		}
	}
	return out
}

// Lead says what the matrix found, in sentences derived from the result
// alone: whether every trial matched the model, which settings lose ACKed
// work and where, which patterns duplicate or lose other work and under
// which faults, and which patterns are safe under which settings.
func Lead(st Settings, res results.ScenarioResult) []scenario.Sentence {
	cells := cellsOf(st, res)
	out := []scenario.Sentence{modelSentence(cells)}
	if s, ok := sweepSentence(st, cells); ok {
		out = append(out, s)
	}
	out = append(out, lostAckedSentences(cells)...)
	for _, d := range damages {
		out = append(out, damageSentences(cells, d)...)
	}
	return append(out, safeSentences(cells)...)
}

// modelSentence says whether every outcome is one the model allows, which
// is all a pass means here.
func modelSentence(cells []cell) scenario.Sentence {
	var miss []string
	for _, c := range cells {
		if !c.ok() {
			miss = append(miss, c.name())
		}
	}
	if len(miss) == 0 {
		text := fmt.Sprintf("Every one of the %d trials ended as the durability model predicts", len(cells))
		if slices.ContainsFunc(cells, func(c cell) bool { return !c.safe() }) {
			text += "; every loss and duplicate below is one it predicts"
		}
		return scenario.Sentence{Text: text + "."}
	}
	return scenario.Sentence{Text: fmt.Sprintf("%d of the %d trials ended outside the durability model's allowed outcomes: %s.", len(miss), len(cells), strings.Join(miss, ", ")), Cells: miss}
}

// lostAckedSentences say, per crash kind, which settings lost work a
// worker had acknowledged, and at which points; settings that lost it at
// the same points share a sentence.
func lostAckedSentences(cells []cell) []scenario.Sentence {
	var out []scenario.Sentence
	for _, kind := range everyKind {
		where := map[string][]cell{}
		var settings []string
		for _, c := range cells {
			if c.cond.Kind == kind && c.has(TagLostAcked) {
				if where[c.setting()] == nil {
					settings = append(settings, c.setting())
				}
				where[c.setting()] = append(where[c.setting()], c)
			}
		}
		for _, group := range groupBy(settings, func(s string) string { return pointsPhrase(where[s]) }) {
			var names []string
			for _, s := range group {
				names = append(names, cellNames(where[s])...)
			}
			out = append(out, scenario.Sentence{
				Text:  fmt.Sprintf("%s loses ACKed work under %s: %s.", capital(kindPhrase[kind]), scenario.JoinAnd(group), pointsPhrase(where[group[0]])),
				Cells: names,
			})
		}
	}
	return out
}

// kindPhrase names a crash kind in a sentence.
var kindPhrase = map[string]string{KindKill: "a process kill", KindPower: "a power cut", KindServer: "a server crash"}

// kindsVerb says what the crash kinds of the cells' backend do to a
// trial.
func kindsVerb(cells []cell) string {
	if slices.ContainsFunc(cells, func(c cell) bool { return c.cond.OnServer() }) {
		return "killed or server-crashed"
	}
	return "killed or power-cut"
}

// damage is a harm other than lost ACKed work, as a pattern's verb.
type damage struct {
	tag  string
	verb string
}

// damages in the order the sentences come.
var damages = []damage{
	{TagDuplicate, "does work twice (two jobs, a send accepted twice, or two claim winners in one TTL)"},
	{TagLostClaim, "loses a committed claim"},
	{TagLostDownstream, "loses committed downstream fields"},
	{TagMissing, "leaves work missing at the end"},
	{TagCorrupt, "leaves a file that fails integrity_check"},
	{TagError, "has a worker after the cut fail"},
}

// damageSentences say, per pattern, where the harm happened: at which
// points, after which crash kind, under which settings.
func damageSentences(cells []cell, d damage) []scenario.Sentence {
	var out []scenario.Sentence
	for _, p := range AllPatterns {
		var hit []cell
		for _, c := range cells {
			if c.cond.Pattern == p && c.has(d.tag) {
				hit = append(hit, c)
			}
		}
		if len(hit) == 0 {
			continue
		}
		verb := d.verb
		if d.tag == TagCorrupt && hit[0].cond.OnServer() {
			verb = "leaves tables in which amcheck finds damage"
		}
		out = append(out, scenario.Sentence{
			Text:  fmt.Sprintf("%s %s: %s.", p, verb, faultsPhrase(hit, triedSettings(cells))),
			Cells: cellNames(hit),
		})
	}
	return out
}

// safeSentences say, per pattern, the settings under which every trial,
// killed or power-cut, lost nothing and did nothing twice; patterns safe
// under the same settings share a sentence.
func safeSentences(cells []cell) []scenario.Sentence {
	safe := map[string][]string{}
	var patterns []string
	for _, p := range AllPatterns {
		var mine []cell
		for _, c := range cells {
			if c.cond.Pattern == p {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			continue
		}
		patterns = append(patterns, p)
		safe[p] = []string{}
		for _, s := range triedSettings(mine) {
			if !slices.ContainsFunc(mine, func(c cell) bool { return c.setting() == s && !c.safe() }) {
				safe[p] = append(safe[p], s)
			}
		}
	}
	var out []scenario.Sentence
	for _, group := range groupBy(patterns, func(p string) string { return strings.Join(safe[p], ",") }) {
		settings := safe[group[0]]
		if len(settings) == 0 {
			out = append(out, scenario.Sentence{Text: fmt.Sprintf("%s %s safe under no setting tried.", scenario.JoinAnd(group), scenario.Plural(len(group), "is", "are"))})
			continue
		}
		var names []string
		for _, c := range cells {
			if slices.Contains(group, c.cond.Pattern) && slices.Contains(settings, c.setting()) && !slices.Contains(names, c.cond.Name) {
				names = append(names, c.cond.Name)
			}
		}
		out = append(out, scenario.Sentence{
			Text: fmt.Sprintf("%s %s safe under %s: %s at every point, nothing was lost, done twice or left missing (at most a crashed worker's commit rolled back and was redone).",
				scenario.JoinAnd(group), scenario.Plural(len(group), "is", "are"), scenario.JoinAnd(settings), kindsVerb(cells)),
			Cells: names,
		})
	}
	return out
}

// triedSettings lists the cells' settings (journal_mode/synchronous
// pairs, or synchronous_commit levels) in the matrix's order.
func triedSettings(cells []cell) []string {
	var out []string
	for _, name := range settingOrder() {
		if slices.ContainsFunc(cells, func(c cell) bool { return c.setting() == name }) {
			out = append(out, name)
		}
	}
	return out
}

// pointsPhrase names the cells' points, pattern by pattern: "redelivery-
// single at ack; batch-journal at ack, before-send:item-001".
func pointsPhrase(cells []cell) string {
	var parts []string
	for _, p := range AllPatterns {
		var pts []string
		for _, c := range cells {
			if c.cond.Pattern == p && !slices.Contains(pts, c.point) {
				pts = append(pts, c.point)
			}
		}
		if len(pts) > 0 {
			parts = append(parts, p+" at "+strings.Join(pts, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// faultsPhrase names where one pattern's cells are: each point (points
// with the same faults together) with the crash kinds and settings,
// "every setting" when it is all the matrix tried.
func faultsPhrase(cells []cell, all []string) string {
	var points []string
	for _, c := range cells {
		if !slices.Contains(points, c.point) {
			points = append(points, c.point)
		}
	}
	faults := func(pt string) string {
		var phrases, kinds []string // kinds[i] is the crash kinds phrases[i] names
		for _, k := range everyKind {
			var at []cell
			for _, c := range cells {
				if c.point == pt && c.cond.Kind == k {
					at = append(at, c)
				}
			}
			if len(at) == 0 {
				continue
			}
			s := triedSettings(at)
			phrase := scenario.JoinAnd(s)
			if slices.Equal(s, all) {
				phrase = "every setting"
			}
			if i := slices.Index(phrases, phrase); i >= 0 {
				kinds[i] += " or " + kindPhrase[k]
				continue
			}
			phrases, kinds = append(phrases, phrase), append(kinds, kindPhrase[k])
		}
		var parts []string
		for i, phrase := range phrases {
			parts = append(parts, "after "+kinds[i]+" under "+phrase)
		}
		return strings.Join(parts, ", and ")
	}
	var parts []string
	for _, group := range groupBy(points, faults) {
		parts = append(parts, "at "+scenario.JoinAnd(group)+" "+faults(group[0]))
	}
	return strings.Join(parts, "; ")
}

// groupBy groups xs by key, keeping the order of first appearance.
func groupBy(xs []string, key func(string) string) [][]string {
	var keys []string
	groups := map[string][]string{}
	for _, x := range xs {
		k := key(x)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], x)
	}
	out := make([][]string, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

func cellNames(cells []cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.name()
	}
	return out
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// sweepSentence states, for a run that sweeps PostgreSQL power conditions'
// fsyncs, the cuts each swept condition made (backend.SweepSentence).
func sweepSentence(st Settings, cells []cell) (scenario.Sentence, bool) {
	var swept []backend.SweptCondition
	for _, c := range st.Conditions {
		if !st.pgSweeps(c) {
			continue
		}
		n := 0
		for _, cl := range cells {
			if _, ok := ParseSyncPoint(cl.point); ok && cl.cond.Name == c.Name {
				n++
			}
		}
		swept = append(swept, backend.SweptCondition{Name: c.Name, Cuts: n})
	}
	text, ok := backend.SweepSentence(swept)
	return scenario.Sentence{Text: text}, ok
}
