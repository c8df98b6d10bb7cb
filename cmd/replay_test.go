package cmd

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/explore"
	"idemlab/experiments/results"
)

// exploreInput is a small explore section: two seeded crashes and two
// kills per redelivery pattern, no races, two batch items.
const exploreInput = `{"explore": {"event_id": "e-1", "job_key": "k-1", "seed": 1, "trials": 4, "racers": [2], "rounds": 0, "parallel": 2, "max_attempts": 3, "items": 2}}`

// exploreFolder writes the small explore input into a fresh folder and
// names a results folder beside it.
func exploreFolder(t *testing.T) (in, out string) {
	t.Helper()
	dir := t.TempDir()
	in = filepath.Join(dir, "explore.json")
	if err := os.WriteFile(in, []byte(exploreInput), 0o644); err != nil {
		t.Fatal(err)
	}
	return in, filepath.Join(dir, "results")
}

// printedReplays returns each printed replay's subject and command.
func printedReplays(stdout string) [][2]string {
	var out [][2]string
	lines := strings.Split(stdout, "\n")
	for i, l := range lines {
		if what, ok := strings.CutPrefix(l, "replay "); ok && i+1 < len(lines) {
			out = append(out, [2]string{strings.TrimSuffix(what, ":"), strings.TrimSpace(lines[i+1])})
		}
	}
	return out
}

func exploreExtra(t *testing.T, dir string) explore.Extra {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var r results.Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Scenarios {
		if s.Name == explore.Name {
			var x explore.Extra
			if err := json.Unmarshal(s.Extra, &x); err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	t.Fatalf("%s has no explore result", dir)
	return explore.Extra{}
}

// TestReplayRunsAsPrinted runs the printed replay of a seeded crash
// verbatim, split into words, and finds the same trial breaking the same
// invariant, alone.
func TestReplayRunsAsPrinted(t *testing.T) {
	t.Parallel()
	in, out := exploreFolder(t)
	r := execIn(t, Hooks{}, "experiment", "--scenario", "explore", "--input", in, "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var what, command string
	for _, p := range printedReplays(r.stdout) {
		if strings.Contains(p[1], "--only-trial") {
			what, command = p[0], p[1]
			break
		}
	}
	if command == "" {
		t.Fatalf("no replay of a seeded trial printed:\n%s", r.stdout)
	}
	var cond, inv string
	var trial int
	if _, err := fmt.Sscanf(strings.NewReplacer("(", "", ")", "").Replace(what), "%s trial %d %s", &cond, &trial, &inv); err != nil {
		t.Fatalf("replay subject %q: %v", what, err)
	}
	self := selfName() + " "
	if !strings.HasPrefix(command, self) {
		t.Fatalf("replay %q does not start with the binary %q", command, self)
	}
	argv := strings.Fields(strings.TrimPrefix(command, self))
	if argv[0] != "experiment" || !strings.Contains(command, "--input "+in) {
		t.Fatalf("replay %q is not an experiment on the run's input", command)
	}
	rr := execIn(t, Hooks{}, argv...)
	if rr.code != 0 {
		t.Fatalf("replay %q: exit %d, stderr:\n%s", command, rr.code, rr.stderr)
	}
	replayed := argv[len(argv)-1]
	if argv[len(argv)-2] != "--out" || !strings.HasPrefix(replayed, out+"-replay-") {
		t.Fatalf("replay %q does not end with a fresh --out beside %s", command, out)
	}
	found := false
	for _, v := range exploreExtra(t, replayed).Violations {
		found = found || v.Condition == cond && v.Trial == trial && v.Invariant == inv
		if v.Trial != trial {
			t.Errorf("the replay of trial %d ran trial %d of %s", trial, v.Trial, v.Condition)
		}
	}
	if !found {
		t.Errorf("the replay %q did not break %s in %s trial %d again", command, inv, cond, trial)
	}
}

// TestOnlyTrialOutsideThePlanExitsTwo: an index the plan does not have is
// a usage error, and nothing is written.
func TestOnlyTrialOutsideThePlanExitsTwo(t *testing.T) {
	t.Parallel()
	in, out := exploreFolder(t)
	r := execIn(t, Hooks{}, "experiment", "--scenario", "explore", "--input", in, "--only-trial", "100000", "--out", out)
	if r.code != 2 || !strings.Contains(r.stderr, "--only-trial 100000") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --only-trial", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the folder was written")
	}
}

// TestArticleVerdictsAsThePatternScenarios: explore runs its article
// patterns from testdata/patterns, so the pattern scenario run on one of
// those files, with explore's seed and trials, gives each condition the
// verdict explore's article condition got: whether it broke an invariant,
// and whether that passed the file's known_unsafe.
func TestArticleVerdictsAsThePatternScenarios(t *testing.T) {
	t.Parallel()
	in, out := exploreFolder(t)
	if r := execIn(t, Hooks{}, "experiment", "--scenario", "explore", "--input", in, "--out", out); r.code != 0 {
		t.Fatalf("explore: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	type verdict struct{ Pass, Violated bool }
	verdicts := func(res results.ScenarioResult, keep func(results.ConditionResult) bool) map[string]verdict {
		m := map[string]verdict{}
		for _, c := range res.Conditions {
			var o struct {
				Violated bool `json:"violated"`
			}
			if err := json.Unmarshal(c.Observed, &o); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if keep(c) {
				m[c.Name] = verdict{c.Pass, o.Violated}
			}
		}
		return m
	}
	res := readResults(t, out).Scenarios[0]
	want := verdicts(res, func(c results.ConditionResult) bool {
		var e explore.Expected
		return json.Unmarshal(c.Expected, &e) == nil && e.Kind == explore.KindFile
	})
	got := map[string]verdict{}
	for _, name := range explore.Articles {
		r, dir := runPattern(t, patterns+name+".json", "--faults", "points,random", "--seed", "1", "--trials", "4")
		if r.code != 0 {
			t.Fatalf("pattern %s: exit %d, stderr:\n%s", name, r.code, r.stderr)
		}
		maps.Copy(got, verdicts(readResults(t, dir).Scenarios[0], func(results.ConditionResult) bool { return true }))
	}
	if len(want) == 0 {
		t.Fatal("explore ran no article condition")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts, explore's article conditions (-) and the pattern scenario's (+):\n%s", diff)
	}
}
