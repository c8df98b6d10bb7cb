package patternfile

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/engine"
	"idemlab/experiments/shard"
	wp "idemlab/worker/pattern"
)

// TestProcessesSplitByShard: the shards of a run count the whole run's
// processes between them, each part its own trials and every part the
// discoveries.
func TestProcessesSplitByShard(t *testing.T) {
	steps := []wp.Step{{Begin: "IMMEDIATE"}, {Exec: "INSERT INTO t VALUES (1)"}, {Commit: true}}
	st := Settings{
		Seed: 3, HitTrials: 7, KillTrials: 5, Racers: []int{2, 3}, Rounds: 4, Faults: engine.FaultWords(),
		Patterns: []Pattern{{File: wp.File{Name: "p", Handler: steps}, Power: []string{"WAL/FULL"}}},
	}
	st.Conditions = []Condition{{Name: "p/none", Pattern: "p", Fault: FaultNone}}
	for _, f := range engine.FaultWords() {
		c := Condition{Name: "p/" + f, Pattern: "p", Fault: f}
		if f == wp.FaultPower {
			c.Power = "WAL/FULL"
		}
		st.Conditions = append(st.Conditions, c)
	}
	whole := st.Processes()
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sum := 0
			for i := 1; i <= n; i++ {
				s := st
				s.Shard = &shard.Part{Index: i, Count: n}
				sum += s.Processes()
			}
			if diff := cmp.Diff(whole+(n-1)*len(st.Patterns), sum); diff != "" {
				t.Errorf("the shards' processes (-whole run and a discovery a shard +sum):\n%s", diff)
			}
		})
	}
}
