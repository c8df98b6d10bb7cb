package cmd

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/all"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// folderRun is a folder's result and records of one scenario.
type folderRun struct {
	result  results.ScenarioResult
	records results.Records
}

func runOf(t *testing.T, dir, name string) folderRun {
	t.Helper()
	f := loadFolder(t, dir)
	for _, s := range f.Results.Scenarios {
		if s.Name == name {
			return folderRun{s, f.Records(name)}
		}
	}
	t.Fatalf("%s: no scenario %s", dir, name)
	return folderRun{}
}

// deterministic are the conditions of runs a and b that the seed and the
// points decide, less the fields the scenario declares measurements in
// either (as verify --rerun compares): what two runs of one plan must
// share however they were scheduled.
func deterministic(t *testing.T, name string, a, b folderRun) (map[string]results.ConditionResult, map[string]results.ConditionResult) {
	t.Helper()
	s, ok := all.Scenarios(sourcePatterns).Lookup(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	m := scenario.Measurements(s, a.result.Settings, a.records)
	m.Union(scenario.Measurements(s, b.result.Settings, b.records))
	conds := func(r folderRun) map[string]results.ConditionResult {
		out := map[string]results.ConditionResult{}
		for _, c := range scenario.Replayable(r.result, m).Conditions {
			if !c.Scheduled {
				out[c.Name] = c
			}
		}
		return out
	}
	return conds(a), conds(b)
}

// TestParallelOneEqualsDefault: a run with --parallel 1 and one with the
// default (as many as the machine runs) or more give the same settings
// and the same deterministic conditions, each recording beside the
// settings how many trials it ran at once.
func TestParallelOneEqualsDefault(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real runs")
	}
	tests := []struct {
		scenario string
		flags    []string
	}{
		{"explore", []string{"--trials", "4", "--rounds", "1", "--seed", "1"}},
		{"durability", rerunSettings["durability"]},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			one := experimentFolder(t, Hooks{}, "../input.json", tc.scenario, append([]string{"--parallel", "1"}, tc.flags...)...)
			first := runOf(t, one, tc.scenario)
			for _, p := range []int{0, 3} {
				flags := tc.flags
				if p > 0 {
					flags = append([]string{"--parallel", fmt.Sprint(p)}, flags...)
				}
				dir := experimentFolder(t, Hooks{}, "../input.json", tc.scenario, flags...)
				this := runOf(t, dir, tc.scenario)
				if diff := cmp.Diff(string(first.result.Settings), string(this.result.Settings)); diff != "" {
					t.Errorf("--parallel %d: settings (-parallel 1 +this):\n%s", p, diff)
				}
				want, got := deterministic(t, tc.scenario, first, this)
				if len(want) == 0 {
					t.Fatal("no deterministic condition to compare")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("--parallel %d: deterministic conditions (-parallel 1 +this):\n%s", p, diff)
				}
				// The input file sets no parallel: the default is the
				// machine's.
				wantN := p
				if p == 0 {
					wantN = runtime.GOMAXPROCS(0)
				}
				if this.result.Parallel != wantN {
					t.Errorf("--parallel %d: results.json records parallel %d, want %d", p, this.result.Parallel, wantN)
				}
			}
			if first.result.Parallel != 1 {
				t.Errorf("--parallel 1: results.json records parallel %d", first.result.Parallel)
			}
		})
	}
}
