package deliver

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/engine"
	"idemlab/experiments/shard"
)

// TestConditionPlansAsTheEngine: a condition's trials are the engine's
// plan of its set, its racers killed after seeded delays where it kills
// them, and a discovery plans none (every part runs it, outside the plan).
func TestConditionPlansAsTheEngine(t *testing.T) {
	const seed = uint64(11)
	points := []string{"a", "b", "c"}
	tests := []struct {
		name string
		c    Condition
		want engine.Set
	}{
		{"sweep", Condition{Name: "s/sweep", Class: engine.Points}, engine.Set{Class: engine.Points, Condition: "s/sweep"}},
		{"hits", Condition{Name: "s/hits", Class: engine.CrashAtHit, Indices: []int{0, 3}}, engine.Set{Class: engine.CrashAtHit, Condition: "s/hits", Indices: []int{0, 3}}},
		{"race", Condition{Name: "s/race", Class: engine.Concurrent, Indices: []int{1}, Racers: 3}, engine.Set{Class: engine.Concurrent, Condition: "s/race", Indices: []int{1}, Racers: 3}},
		{"race with kills", Condition{Name: "s/race-kill", Class: engine.Concurrent, Indices: []int{1}, Racers: 2, Cond: Cond{Kills: true}},
			engine.Set{Class: engine.Concurrent, Condition: "s/race-kill", Indices: []int{1}, Racers: 2, RaceFault: engine.DelayKill}},
		{"takeover", Condition{Name: "s/takeover", Class: engine.Takeover, Cond: Cond{Unfenced: true}}, engine.Set{Class: engine.Takeover, Condition: "s/takeover"}},
	}
	part := &shard.Part{Index: 2, Count: 2}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.c.Set()); diff != "" {
				t.Errorf("Set (-want +got):\n%s", diff)
			}
			want, err := engine.Plan(context.Background(), seed, part, []engine.Set{tc.want}, engine.Found{Points: points})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, tc.c.Trials(seed, part, points)); diff != "" {
				t.Errorf("Trials (-want +got):\n%s", diff)
			}
		})
	}
	if got := (Condition{Name: "s/discovery", Class: engine.None}).Trials(seed, nil, points); got != nil {
		t.Errorf("a discovery plans %v, want no trial", got)
	}
}
