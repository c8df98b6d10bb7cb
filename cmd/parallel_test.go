package cmd

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// deterministic are a scenario's conditions that the seed and the points
// decide, as a folder records them: what two runs of one plan must share
// however they were scheduled.
func deterministic(t *testing.T, dir, name string) (json.RawMessage, map[string]results.ConditionResult) {
	t.Helper()
	f := loadFolder(t, dir)
	for _, s := range f.Results.Scenarios {
		if s.Name != name {
			continue
		}
		out := map[string]results.ConditionResult{}
		for _, c := range s.Conditions {
			if !c.Scheduled {
				out[c.Name] = c
			}
		}
		return s.Settings, out
	}
	t.Fatalf("%s: no scenario %s", dir, name)
	return nil, nil
}

// TestParallelOneEqualsDefault: a run with --parallel 1 and one with the
// default (as many as the machine runs) or more give the same settings
// and the same deterministic conditions, each recording beside the
// settings how many trials it ran at once.
func TestParallelOneEqualsDefault(t *testing.T) {
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
			one := experimentFolder(t, Hooks{}, "../input.json", tc.scenario, append([]string{"--parallel", "1"}, tc.flags...)...)
			wantSettings, want := deterministic(t, one, tc.scenario)
			if len(want) == 0 {
				t.Fatal("no deterministic condition to compare")
			}
			for _, p := range []int{0, 3} {
				flags := tc.flags
				if p > 0 {
					flags = append([]string{"--parallel", fmt.Sprint(p)}, flags...)
				}
				dir := experimentFolder(t, Hooks{}, "../input.json", tc.scenario, flags...)
				settings, got := deterministic(t, dir, tc.scenario)
				if diff := cmp.Diff(string(wantSettings), string(settings)); diff != "" {
					t.Errorf("--parallel %d: settings (-parallel 1 +this):\n%s", p, diff)
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
				if got := recordedParallel(t, dir, tc.scenario); got != wantN {
					t.Errorf("--parallel %d: results.json records parallel %d, want %d", p, got, wantN)
				}
			}
			if got := recordedParallel(t, one, tc.scenario); got != 1 {
				t.Errorf("--parallel 1: results.json records parallel %d", got)
			}
		})
	}
}

func recordedParallel(t *testing.T, dir, name string) int {
	t.Helper()
	for _, s := range loadFolder(t, dir).Results.Scenarios {
		if s.Name == name {
			return s.Parallel
		}
	}
	return -1
}
