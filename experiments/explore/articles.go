package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"

	"idemlab/experiments/backend"
	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
)

// The article patterns the step language expresses run from their pattern
// files, through the pattern scenario's subject, fold and oracle: their
// conditions are the pattern scenario's (points, random, concurrent), and
// a file's invariants and known_unsafe judge them. Only what a file
// cannot express stays a built-in subject (BuiltIn).

// ArticleDir is where the article pattern files lie in the source tree,
// beside the other shipped patterns. Explore reads them from the fs.FS it
// is given (New), by the same names from the module's root: the binary's
// embedded copies, which its main embeds. Their names in the settings are
// these, so a replay with the pattern scenario names the same file.
const ArticleDir = "testdata/patterns"

// Articles are the article patterns explore runs from their files, in
// report order.
var Articles = []string{"separate-commit", "single-transaction", "claim-do-nothing", "claim-ttl"}

// ArticleFaults are the fault classes explore puts the files through:
// explore's own (a crash at every point, seeded crashes and kills, races);
// the power class is the pattern scenario's.
var ArticleFaults = []string{wp.FaultPoints, wp.FaultRandom, wp.FaultConcurrent}

// articleFaults are the classes of ArticleFaults the settings give trials:
// random with --trials above 0, concurrent with rounds and racers. A
// class without trials is left out, as the pattern scenario's --faults
// leaves it, since a file that lists it in known_unsafe expects it to
// break (--trials 0 --rounds 0 runs the sweeps alone).
func articleFaults(st Settings) []string {
	out := []string{wp.FaultPoints}
	if PatternTrials(st.Trials, 100) > 0 {
		out = append(out, wp.FaultRandom)
	}
	if st.Rounds > 0 && len(st.Racers) > 0 {
		out = append(out, wp.FaultConcurrent)
	}
	return out
}

// KindFile is the kind of a condition of an article pattern file; its
// oracle is the pattern scenario's (Expected.File).
const KindFile = "pattern-file"

// articleFiles reads the article files by their source names from fsys.
type articleFiles struct{ fsys fs.FS }

func (a articleFiles) ReadFile(name string) ([]byte, error) {
	if a.fsys == nil {
		return nil, errors.New("this explore was given no article pattern files (explore.New)")
	}
	return fs.ReadFile(a.fsys, name)
}

// articleSettings are the pattern scenario's settings of the article files
// as explore runs them on backend on: its seed, event, racers and rounds,
// its random trials per pattern split as its own are. On
// SQLite, one set of settings; on PostgreSQL, one per isolation level of
// the run, with the races alone, each pattern named after its level
// ("separate-commit/serializable") as explore names its races there.
func articleSettings(ctx context.Context, files fs.FS, st Settings, on backend.Spec) ([]pattern.Settings, error) {
	n := PatternTrials(st.Trials, 100)
	base := pattern.Settings{
		EventID: st.EventID, Faults: articleFaults(st), Seed: st.Seed,
		HitTrials: (n + 1) / 2, KillTrials: n / 2,
		Racers: slices.Clone(st.Racers), Rounds: st.Rounds,
		KnownUnsafeRule: pattern.RuleSomeSetting,
	}
	var names []string
	for _, n := range Articles {
		names = append(names, path.Join(ArticleDir, n+".json"))
	}
	if on.IsSQLite() {
		if st.Broker != "" {
			if err := base.PlanBroker(st.brokerOverrides(), nil); err != nil {
				return nil, err
			}
		}
		if err := base.AddFiles(ctx, articleFiles{files}, names, on, nil); err != nil {
			return nil, fmt.Errorf("the article pattern files: %w", err)
		}
		return []pattern.Settings{base}, nil
	}
	if !slices.Contains(base.Faults, wp.FaultConcurrent) {
		return nil, nil
	}
	var out []pattern.Settings
	for _, level := range st.Isolations {
		spec := backend.Spec{Name: on.Name, Isolation: level, SynchronousCommit: on.SynchronousCommit}
		a := base
		a.Faults = []string{wp.FaultConcurrent}
		a.Backend, a.Postgres = spec.Name, spec.Requested()
		if err := a.AddFiles(ctx, articleFiles{files}, names, spec, nil); err != nil {
			return nil, fmt.Errorf("the article pattern files: %w", err)
		}
		for i := range a.Patterns {
			a.Patterns[i].File.Name += "/" + level
		}
		for i, c := range a.Conditions {
			a.Conditions[i].Pattern = c.Pattern + "/" + level
			a.Conditions[i].Name = a.Conditions[i].Pattern + "/" + c.Fault
		}
		out = append(out, a)
	}
	return out, nil
}

// articles are the article files' settings as they run, fold and judge:
// in explore's part of the plan. The recorded settings hold no part of
// their own, so every shard records the same and the plan's hash, which
// leaves the part out, is the same in every shard.
func (st Settings) articles() []pattern.Settings {
	out := slices.Clone(st.Articles)
	for i := range out {
		out[i].Shard = st.Shard
	}
	return out
}

// articleEnv is env with the backend's sessions under a's level.
func articleEnv(env scenario.Env, st Settings, a pattern.Settings) scenario.Env {
	if env.Backend != nil && a.Postgres != nil {
		l, _ := a.Postgres.Level()
		env.Backend = env.Backend.WithSpec(backend.Spec{Name: st.Backend, Isolation: l.String(), SynchronousCommit: st.SynchronousCommit})
	}
	return env
}

// articleExpect states the article conditions' oracles: the pattern
// scenario's, each under explore's KindFile.
func articleExpect(as []pattern.Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, a := range as {
		es, err := pattern.Scenario{}.Expect(a)
		if err != nil {
			return nil, err
		}
		races := map[string]bool{}
		for _, c := range a.Conditions {
			races[c.Name] = c.Fault == wp.FaultConcurrent
		}
		for _, e := range es {
			pe, ok := e.Value.(pattern.Expected)
			if !ok {
				return nil, fmt.Errorf("condition %s: the pattern oracle gave %T", e.Condition, e.Value)
			}
			// A race shows a known-unsafe pattern's break when the OS
			// interleaves the racers badly, which a few rounds need not
			// do: explore records whether it did, and asks no more.
			pe.MayHold = pe.Violated && races[e.Condition]
			e.Value = Expected{Kind: KindFile, File: &pe}
			out = append(out, e)
		}
	}
	return out, nil
}

// conditionsOf are the names of a's conditions.
func conditionsOf(a pattern.Settings) map[string]bool {
	out := map[string]bool{}
	for _, c := range a.Conditions {
		out[c.Name] = true
	}
	return out
}

// splitRecords parts the records into each article settings' (their
// conditions' lines and processes) and the built-in subjects'
// (results.Records.Split).
func splitRecords(as []pattern.Settings, rec results.Records) (builtin results.Records, files []results.Records) {
	builtin = rec
	for _, a := range as {
		mine := conditionsOf(a)
		f, rest := builtin.Split(func(c string) bool { return mine[c] })
		builtin, files = rest, append(files, f)
	}
	return builtin, files
}

// foldArticles folds each article settings' records with the pattern
// scenario's fold and joins what it derived to the built-in subjects'.
func foldArticles(st Settings, recs []results.Records, folded *scenario.Folded, extra *Extra) []results.Finding {
	if len(st.Articles) == 0 {
		return nil
	}
	var findings []results.Finding
	var discovered []any
	for i, a := range st.articles() {
		af, fs := pattern.Scenario{}.Fold(a, recs[i])
		findings = append(findings, fs...)
		maps.Copy(folded.Observed, af.Observed)
		if x, ok := af.Extra.(pattern.Extra); ok {
			extra.Articles = append(extra.Articles, x)
		}
		folded.Plan = append(folded.Plan, af.Plan...)
		folded.Ran = append(folded.Ran, af.Ran...)
		discovered = append(discovered, af.Discovered)
	}
	folded.Discovered = struct {
		BuiltIn  any   `json:"built_in"`
		Articles []any `json:"articles"`
	}{folded.Discovered, discovered}
	return findings
}

// articleResult is res's article conditions, each with the pattern
// oracle's expected figure, as the pattern scenario's report and
// explanations read them; rest is res without them.
func articleResult(res results.ScenarioResult) (files, rest results.ScenarioResult, err error) {
	files, rest = res, res
	files.Conditions, rest.Conditions = nil, nil
	for _, c := range res.Conditions {
		var e Expected
		if err := json.Unmarshal(c.Expected, &e); err != nil {
			return files, rest, fmt.Errorf("condition %s: %w", c.Name, err)
		}
		if e.Kind != KindFile {
			rest.Conditions = append(rest.Conditions, c)
			continue
		}
		if c.Expected, err = json.Marshal(e.File); err != nil {
			return files, rest, err
		}
		files.Conditions = append(files.Conditions, c)
	}
	return files, rest, nil
}

// reportArticles adds the pattern scenario's account of the article files
// to the section: its lead, tables and replays, per set of settings.
func reportArticles(st Settings, files results.ScenarioResult, extra Extra, sec *scenario.Section) error {
	as := st.articles()
	if len(extra.Articles) != len(as) {
		return nil
	}
	var lead []scenario.Sentence
	var tables []scenario.Table
	for i, a := range as {
		ps, err := pattern.Scenario{}.Report(a, only(files, a), extra.Articles[i])
		if err != nil {
			return err
		}
		lead, tables = append(lead, ps.Lead...), append(tables, ps.Tables...)
		sec.Replays = append(sec.Replays, ps.Replays...)
	}
	sec.Lead = append(lead, sec.Lead...)
	sec.Tables = append(tables, sec.Tables...)
	return nil
}

// only is res with a's conditions alone.
func only(res results.ScenarioResult, a pattern.Settings) results.ScenarioResult {
	mine := conditionsOf(a)
	res.Conditions = slices.DeleteFunc(slices.Clone(res.Conditions), func(c results.ConditionResult) bool { return !mine[c.Name] })
	return res
}
