package explore

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

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

//go:embed articles/*.json
var articleFS embed.FS

// ArticleDir is where the article pattern files lie in the source tree.
// Their names in the settings are under it, so a replay with the pattern
// scenario names the same file from the module's root.
const ArticleDir = "experiments/explore/articles"

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

// articleFiles reads the embedded article files by their source names.
type articleFiles struct{}

func (articleFiles) ReadFile(name string) ([]byte, error) {
	rel, ok := strings.CutPrefix(name, ArticleDir+"/")
	if !ok {
		return nil, fmt.Errorf("%s: not an article pattern file (%s/*.json)", name, ArticleDir)
	}
	return articleFS.ReadFile(path.Join("articles", rel))
}

// articleSettings are the pattern scenario's settings of the article files
// as explore runs them: its seed, event, racers, rounds and parallelism,
// its random trials per pattern split as its own are, and its shard.
func articleSettings(ctx context.Context, st Settings, on backend.Spec) (*pattern.Settings, error) {
	n := PatternTrials(st.Trials, 100)
	a := &pattern.Settings{
		EventID: st.EventID, Faults: articleFaults(st), Seed: st.Seed,
		HitTrials: (n + 1) / 2, KillTrials: n / 2,
		Racers: slices.Clone(st.Racers), Rounds: st.Rounds, Parallel: st.Parallel,
		KnownUnsafeRule: pattern.RuleSomeSetting,
	}
	var names []string
	for _, n := range Articles {
		names = append(names, path.Join(ArticleDir, n+".json"))
	}
	if err := a.AddFiles(ctx, articleFiles{}, names, on, nil); err != nil {
		return nil, fmt.Errorf("the article pattern files: %w", err)
	}
	return a, nil
}

// articles are the article files' settings as they run, fold and judge:
// in explore's part of the plan. The recorded settings hold no part of
// their own, so every shard records the same and the plan's hash, which
// leaves the part out, is the same in every shard.
func (st Settings) articles() *pattern.Settings {
	if st.Articles == nil {
		return nil
	}
	a := *st.Articles
	a.Shard = st.Shard
	return &a
}

// articleExpect states the article conditions' oracles: the pattern
// scenario's, each under explore's KindFile.
func articleExpect(a *pattern.Settings) ([]scenario.Expected, error) {
	if a == nil {
		return nil, nil
	}
	es, err := pattern.Scenario{}.Expect(*a)
	if err != nil {
		return nil, err
	}
	for i, e := range es {
		pe, ok := e.Value.(pattern.Expected)
		if !ok {
			return nil, fmt.Errorf("condition %s: the pattern oracle gave %T", e.Condition, e.Value)
		}
		es[i].Value = Expected{Kind: KindFile, File: &pe}
	}
	return es, nil
}

// splitRecords parts the records into the article files' (their
// conditions' lines and processes) and the built-in subjects'.
func splitRecords(a *pattern.Settings, rec results.Records) (builtin, files results.Records) {
	if a == nil {
		return rec, results.Records{}
	}
	mine := map[string]bool{}
	for _, c := range a.Conditions {
		mine[c.Name] = true
	}
	fo, bo := partition(rec.Observations, func(l results.Line) bool { return mine[l.Condition] })
	fp, bp := partition(rec.Processes, func(p results.Process) bool { return mine[p.Condition] })
	builtin, files = results.NewRecords(bo, bp), results.NewRecords(fo, fp)
	builtin.Shards, files.Shards = rec.Shards, rec.Shards
	return builtin, files
}

// partition splits xs into those in says are in, and the rest, in order.
func partition[T any](xs []T, in func(T) bool) (yes, no []T) {
	for _, x := range xs {
		if in(x) {
			yes = append(yes, x)
		} else {
			no = append(no, x)
		}
	}
	return yes, no
}

// foldArticles folds the article files' records with the pattern
// scenario's fold and joins what it derived to the built-in subjects'.
func foldArticles(st Settings, rec results.Records, folded *scenario.Folded, extra *Extra) []results.Finding {
	a := st.articles()
	if a == nil {
		return nil
	}
	af, findings := pattern.Scenario{}.Fold(*a, rec)
	maps.Copy(folded.Observed, af.Observed)
	if x, ok := af.Extra.(pattern.Extra); ok {
		extra.Articles = &x
	}
	folded.Plan = append(folded.Plan, af.Plan...)
	folded.Ran = append(folded.Ran, af.Ran...)
	folded.Discovered = struct {
		BuiltIn  any `json:"built_in"`
		Articles any `json:"articles"`
	}{folded.Discovered, af.Discovered}
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
// to the section: its lead, tables and replays.
func reportArticles(st Settings, files results.ScenarioResult, extra Extra, sec *scenario.Section) error {
	if st.Articles == nil || extra.Articles == nil {
		return nil
	}
	ps, err := pattern.Scenario{}.Report(*st.articles(), files, *extra.Articles)
	if err != nil {
		return err
	}
	sec.Lead = append(ps.Lead, sec.Lead...)
	sec.Tables = append(ps.Tables, sec.Tables...)
	sec.Replays = append(sec.Replays, ps.Replays...)
	return nil
}
