package merge

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/shard"
)

// TestSameJob: a shard's folder is the work of a job when part,
// scenarios, flags, input and executable agree; --parallel, how the run
// was scheduled, may differ, or be given on one side only.
func TestSameJob(t *testing.T) {
	folder := func(ov map[string]string) *results.Results {
		return &results.Results{
			Shard: &shard.Part{Index: 1, Count: 2}, Code: results.Code{ExecutableSHA256: "exe"},
			Inputs:    results.Inputs{SHA256: "in"},
			Scenarios: []results.ScenarioResult{{Name: "explore", Overrides: ov}},
		}
	}
	job := func(ov map[string]string) Job {
		return Job{Part: shard.Part{Index: 1, Count: 2}, Scenarios: []string{"explore"}, Overrides: ov, InputSHA256: "in", ExecutableSHA256: "exe"}
	}
	seed1 := map[string]string{"shard": "1/2", "seed": "1"}
	tests := []struct {
		name string
		r    *results.Results
		job  Job
		want []string
	}{
		{"the same", folder(seed1), job(seed1), nil},
		{"--parallel differs", folder(map[string]string{"shard": "1/2", "seed": "1", "parallel": "2"}), job(map[string]string{"shard": "1/2", "seed": "1", "parallel": "8"}), nil},
		{"--parallel on one side", folder(seed1), job(map[string]string{"shard": "1/2", "seed": "1", "parallel": "1"}), nil},
		{"another seed", folder(seed1), job(map[string]string{"shard": "1/2", "seed": "2"}), []string{"it ran with the flags --seed 1 --shard 1/2, this run with --seed 2 --shard 1/2"}},
		{"another part", folder(seed1), Job{Part: shard.Part{Index: 2, Count: 2}}, []string{"it is shard 1/2"}},
		{"another scenario, input and executable", folder(seed1), Job{Part: shard.Part{Index: 1, Count: 2}, Scenarios: []string{"pattern"}, Overrides: seed1, InputSHA256: "other", ExecutableSHA256: "other"}, []string{
			"it ran the scenarios explore, this run pattern",
			"its input hashes to in, this run's to other",
			"its executable hashed to exe, this one to other",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, sameJob(tt.r, tt.job)); d != "" {
				t.Errorf("reasons (-want +got):\n%s", d)
			}
		})
	}
}
