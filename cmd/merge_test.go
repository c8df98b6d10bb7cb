package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/all"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// shardFlags are explore's small settings with a fixed seed: every
// shard, and the unsharded run, plans the same trials. No races: an
// article file's concurrent class, which its known_unsafe may list, is
// judged by whether the scheduler let it break, which two runs need not
// share; seed 1's crashes at a seeded hit break separate-commit's and
// claim-do-nothing's random class in every run.
var shardFlags = []string{"--input", "../input.json", "--scenario", "explore", "--trials", "4", "--rounds", "0", "--seed", "1"}

// flagsWith is shardFlags with one flag's value replaced.
func flagsWith(name, value string) []string {
	out := append([]string{}, shardFlags...)
	for i := range out {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

// runShards runs the plan as n shards, two at a time, as the README's
// xargs -P 2 line does, and returns their folders in shard order. With
// only, it runs just those shards, each with its own flags, and leaves
// the others' folders unmade.
func runShards(t *testing.T, base []string, n int, only map[int][]string) []string {
	t.Helper()
	dirs := make([]string, n)
	flags := make([][]string, n)
	for i := range n {
		dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", i+1))
		f, ok := only[i+1]
		if only == nil {
			f, ok = base, true
		}
		if ok {
			flags[i] = f
		}
	}
	if err := shardJobs(dirs, flags); err != nil {
		t.Fatal(err)
	}
	return dirs
}

// shardJobs runs shard i+1/len(dirs) with flags[i] into dirs[i], two at a
// time, and skips a shard whose flags are nil. A shard's own part may
// fail (exit 1; merge judges the whole plan): any other exit is the error.
func shardJobs(dirs []string, flags [][]string) error {
	n := len(dirs)
	codes := make([]run, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range n {
		if flags[i] == nil {
			continue
		}
		args := append([]string{"experiment", "--quiet", "--shard", fmt.Sprintf("%d/%d", i+1, n), "--out", dirs[i]}, flags[i]...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			codes[i] = execute1(Hooks{}, args...)
		}()
	}
	wg.Wait()
	for i, r := range codes {
		if flags[i] != nil && r.code != 0 && r.code != 1 {
			return fmt.Errorf("shard %d/%d: exit %d\n%s%s", i+1, n, r.code, r.stdout, r.stderr)
		}
	}
	return nil
}

// twoShards is shardFlags' plan as 2 shards, made once for the tests that
// read them or run commands that must leave them as they were
// (TestSchemaDescribesEveryKey, TestSameOutTwoMerges, TestShardJobRunAgain).
var twoShards = &madeOnce{name: "two-shards", make: func(dir string) ([]string, error) {
	dirs := []string{filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2")}
	return dirs, shardJobs(dirs, [][]string{shardFlags, shardFlags})
}}

// replayable is a folder's one scenario as verify --rerun compares it:
// without the fields the scenario declares measurements, in either
// folder.
func replayable(t *testing.T, name, a, b string) (results.ScenarioResult, results.ScenarioResult) {
	t.Helper()
	fa, fb := loadFolder(t, a), loadFolder(t, b)
	s, _ := all.Scenarios(sourcePatterns).Lookup(name)
	ra, rb := fa.Results.Scenarios[0], fb.Results.Scenarios[0]
	m := scenario.Measurements(s, ra.Settings, fa.Records(name))
	m.Union(scenario.Measurements(s, rb.Settings, fb.Records(name)))
	return scenario.Replayable(ra, m), scenario.Replayable(rb, m)
}

// mergeEqualsWhole runs scenario name with flags whole and as n shards,
// merges the shards, and fails unless the merged folder gives what the
// whole run gave, measurements aside, and verifies. It returns the merged
// folder and the shards'.
func mergeEqualsWhole(t *testing.T, name string, flags []string, n int) (string, []string) {
	t.Helper()
	whole := filepath.Join(t.TempDir(), "whole")
	if r := execIn(t, Hooks{}, append([]string{"experiment", "--quiet", "--out", whole}, flags...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("unsharded: exit %d\n%s", r.code, r.stderr)
	}
	shards := runShards(t, flags, n, nil)
	merged := filepath.Join(t.TempDir(), "merged")
	if r := execIn(t, Hooks{}, append([]string{"merge", "--out", merged}, shards...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sameAsWhole(t, name, whole, merged, n)
	return merged, shards
}

// sameAsWhole fails unless the folder merged from n shards gives what the
// unsharded run gave, measurements aside, and verifies.
func sameAsWhole(t *testing.T, name, whole, merged string, n int) {
	t.Helper()
	a, b := replayable(t, name, whole, merged)
	type view struct {
		Overrides  map[string]string
		Settings   string
		Conditions []results.ConditionResult
		Extra      string
		Findings   []results.Finding
		Pass       bool
	}
	va := view{a.Overrides, string(a.Settings), a.Conditions, string(a.Extra), a.Findings, a.Pass}
	vb := view{b.Overrides, string(b.Settings), b.Conditions, string(b.Extra), b.Findings, b.Pass}
	if d := cmp.Diff(va, vb); d != "" {
		t.Errorf("%s: merged folder differs from the unsharded one (-unsharded +merged):\n%s", name, d)
	}
	if b.Plan == nil || b.Plan.Count != n || b.Plan.Trials == 0 {
		t.Errorf("merged plan %+v, want one of %d shards", b.Plan, n)
	}
	if r := execIn(t, Hooks{}, "verify", merged); r.code != 0 && r.code != 4 {
		t.Errorf("verify merged: exit %d\n%s", r.code, r.stdout)
	}
}

func loadFolder(t *testing.T, dir string) *results.Folder {
	t.Helper()
	f, err := results.Load(dir, results.Limits{})
	if err != nil || f.Results == nil || len(f.Findings) > 0 {
		t.Fatalf("load %s: %v %v", dir, err, f.Findings)
	}
	return f
}

// TestMergeEqualsUnsharded: explore with a fixed seed, run whole and as 4
// shards joined by merge, gives the same settings, conditions, figures,
// findings and verdict, measurements aside; the merged folder verifies as
// a whole, keeps every shard's records and ids apart, and its report says
// how many shards made it.
func TestMergeEqualsUnsharded(t *testing.T) {
	t.Parallel()
	merged, shards := mergeEqualsWhole(t, "explore", shardFlags, 4)
	rec := loadFolder(t, merged).Records("explore")
	if rec.Shards != 4 {
		t.Errorf("the merged records come from %d shards, want 4", rec.Shards)
	}
	for _, p := range rec.Processes {
		if want := (p.ID-1)/1_000_000_000 + 1; p.Shard != want {
			t.Errorf("process %d is in shard %d's block, want %d", p.ID, p.Shard, want)
		}
	}
	if r := execIn(t, Hooks{}, "report", merged); !strings.Contains(r.stdout, "merged from 4 shards") || !strings.Contains(r.stdout, "shard 4/4") {
		t.Errorf("report of the merged folder does not say it was made by 4 shards:\n%s", r.stdout)
	}
	t.Run("refusals", func(t *testing.T) { testMergeRefusals(t, shards) })
	t.Run("tampered merged folder", func(t *testing.T) {
		c := copyFolder(t, merged)
		editJSON(t, filepath.Join(c, "results.json"), func(m map[string]any) {
			s := m["shards"].([]any)
			s[0].(map[string]any)["observations"] = s[0].(map[string]any)["observations"].(float64) + 1
			s[1].(map[string]any)["observations"] = s[1].(map[string]any)["observations"].(float64) - 1
		})
		// The first line of shard 2's block now reads as shard 1's last.
		// Which line that is depends on which of shard 2's discoveries,
		// run side by side, ended first: a built-in's discovery (then "has
		// 2 steps") or a pattern file's (then its process is in shard 2's
		// records); either way the finding names the line.
		if r := execIn(t, Hooks{}, "verify", c); r.code != 1 || !regexp.MustCompile(`✗ observations.jsonl: line \d+: (trial: \S+ has 2 steps|process_id: process \d+ is in the records of shard 2, but this line is in shard 1's)`).MatchString(r.stdout) {
			t.Errorf("verify of a folder whose blocks moved a line: exit %d, want 1 naming the line\n%s", r.code, r.stdout)
		}
	})
}

// TestMergeEqualsUnshardedEveryScenario: durability, whose normal runs
// are trials of their own, and a pattern, whose known-unsafe classes are
// judged over the whole plan, merge to what one run gives too.
func TestMergeEqualsUnshardedEveryScenario(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, scenario string
		flags          []string
	}{
		{"durability", "durability", []string{"--input", "../input.json", "--scenario", "durability", "--pattern", "redelivery-single,batch-journal", "--journal-mode", "WAL", "--synchronous", "NORMAL,FULL"}},
		{"pattern", "pattern", []string{"--input", "../input.json", "--scenario", "pattern", "--pattern-file", "../testdata/patterns/separate-commit.json", "--faults", "points,power"}},
		// Each shard starts a cluster of its own and crashes its server.
		{"durability on postgres", "durability", []string{"--input", "../input.json", "--backend", "postgres", "--scenario", "durability", "--pattern", "redelivery-separate,claim-ttl", "--kind", "kill,server", "--synchronous-commits", "on,off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if slices.Contains(tt.flags, "postgres") {
				needPostgres(t)
			}
			mergeEqualsWhole(t, tt.scenario, tt.flags, 2)
		})
	}
}

// testMergeRefusals: each folder set that is not the parts of one plan is
// refused with exit 1 and the reason, naming the folder, and nothing is
// written.
func testMergeRefusals(t *testing.T, shards []string) {
	other := filepath.Join(t.TempDir(), "input.json")
	b, err := os.ReadFile("../input.json")
	if err != nil {
		t.Fatal(err)
	}
	// The same sections, another file: its hash differs.
	if err := os.WriteFile(other, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := runShards(t, shardFlags, 4, map[int][]string{2: flagsWith("--input", other), 3: flagsWith("--seed", "12")})
	tampered := copyFolder(t, shards[1])
	tamper(t, filepath.Join(tampered, results.ProcessesFile), `"exit_code":0`, `"exit_code":1`)
	// Shard 2 made by another build, whose results.json was edited to
	// name the others' executable: its process lines still record the
	// hash of the binary its workers ran.
	rebuilt := keptBinary(t)
	fh, err := os.OpenFile(rebuilt, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("another build"))
	fh.Close()
	relabelled := filepath.Join(t.TempDir(), "shard-2-other-binary")
	if r := execIn(t, Hooks{Executable: rebuilt}, append([]string{"experiment", "--quiet", "--shard", "2/4", "--out", relabelled}, shardFlags...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("shard 2/4 by another binary: exit %d\n%s", r.code, r.stderr)
	}
	ours := loadFolder(t, shards[1]).Results.Code.ExecutableSHA256
	editJSON(t, filepath.Join(relabelled, results.ResultsFile), func(m map[string]any) {
		m["code"].(map[string]any)["executable_sha256"] = ours
	})
	tests := []struct {
		name string
		dirs []string
		want []string
	}{
		{"a shard missing", shards[:3], []string{"shard 4/4 is missing"}},
		{"a shard given twice", append(append([]string{}, shards...), copyFolder(t, shards[1])), []string{"shard 2/4 is given twice", shards[1]}},
		{"a shard of another input", []string{shards[0], foreign[1], shards[2], shards[3]}, []string{foreign[1], "another input"}},
		{"a shard of another seed", []string{shards[0], shards[1], foreign[2], shards[3]}, []string{foreign[2], "seed"}},
		{"a tampered shard", []string{shards[0], tampered, shards[2], shards[3]}, []string{tampered, "does not verify"}},
		{"a shard of another binary, relabelled", []string{shards[0], relabelled, shards[2], shards[3]}, []string{relabelled, "does not verify", "code.executable_sha256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			r := execIn(t, Hooks{}, append([]string{"merge", "--out", out}, tt.dirs...)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// tamper replaces the first old in a file with new.
func tamper(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %s", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestShardFlagRefused: a --shard that names no part of a plan, or a
// scenario that cannot be split, is a usage error and writes nothing.
func TestShardFlagRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"shard 0", []string{"--scenario", "explore", "--shard", "0/4"}, "--shard 0/4"},
		{"shard past n", []string{"--scenario", "explore", "--shard", "5/4"}, "--shard 5/4"},
		{"not numbers", []string{"--scenario", "explore", "--shard", "a/b"}, `--shard "a/b"`},
		{"durability too", []string{"--scenario", "durability", "--shard", "0/2"}, "--shard 0/2"},
		{"a scenario that cannot be split", []string{"--scenario", "explore", "--scenario", "redelivery", "--shard", "1/2"}, "redelivery cannot be split"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			r := execIn(t, Hooks{}, append([]string{"experiment", "--input", "../input.json", "--out", out}, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 2 with %q\n%s", r.code, tt.want, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestFormat2FolderStillVerifies: a folder written before results.json
// gained shard, shards and plan (format 2), or before durability ran on
// PostgreSQL (format 3), verifies, and verify says what the next format
// changed.
func TestFormat2FolderStillVerifies(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "results")
	if r := execIn(t, Hooks{}, "experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", dir); r.code != 0 {
		t.Fatalf("experiment: exit %d\n%s", r.code, r.stderr)
	}
	// A folder of format 2 or 3 records no executable per process; one
	// that did would contradict its format.
	procs := filepath.Join(dir, results.ProcessesFile)
	b, _ := os.ReadFile(procs)
	for n := range strings.Count(string(b), "\n") {
		editLine(t, procs, n+1, func(m map[string]any) map[string]any { delete(m, "executable_sha256"); return m })
	}
	for _, format := range []int{2, 3} {
		t.Run(fmt.Sprint(format), func(t *testing.T) {
			editJSON(t, filepath.Join(dir, "results.json"), func(m map[string]any) { m["format"] = format })
			next := fmt.Sprintf("format %d: %s", format+1, results.FormatChanges[format+1][:30])
			r := execIn(t, Hooks{}, "verify", dir)
			if r.code != 0 || !strings.Contains(r.stdout, next) {
				t.Errorf("verify of a format %d folder: exit %d, want 0 with %q named\n%s%s", format, r.code, next, r.stdout, r.stderr)
			}
		})
	}
}
