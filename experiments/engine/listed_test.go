package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/shard"
)

// TestListedAndRan: a fold lists a trial, planned or ran, by its
// condition and its id, the one the shard filter hashes.
func TestListedAndRan(t *testing.T) {
	tests := []struct {
		name  string
		trial Trial
		want  shard.Ran
	}{
		{"counted", Trial{Class: CrashAtHit, Condition: "p/random", Index: 7}, shard.Ran{Trial: shard.Trial{Condition: "p/random", ID: shard.TrialID("p/random", 7)}, Shard: 2}},
		{"swept", Trial{Class: Power, Condition: "d/power", Key: "ack#3"}, shard.Ran{Trial: shard.Trial{Condition: "d/power", ID: "d/power@ack#3"}, Shard: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want.Trial, tc.trial.Listed()); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, tc.trial.Ran(2)); diff != "" {
				t.Errorf("ran (-want +got):\n%s", diff)
			}
		})
	}
}
