package pattern

import (
	"encoding/json"
	"testing"

	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	wp "idemlab/worker/pattern"
)

// TestKnownUnsafeJudgedOverAllShards: a class the file lists as known
// unsafe must break somewhere in the whole plan, so a shard whose part
// did not break it passes, while a whole run (or a merged folder, which
// records no shard) that saw no break fails.
func TestKnownUnsafeJudgedOverAllShards(t *testing.T) {
	st := Settings{
		Patterns:   []Pattern{{File: wp.File{Name: "p", KnownUnsafe: []string{wp.FaultConcurrent}}}},
		Conditions: []Condition{{Name: "p/none", Pattern: "p", Fault: FaultNone}, {Name: "p/concurrent", Pattern: "p", Fault: wp.FaultConcurrent}},
	}
	held, broke := scenario.Marshal(Verdict{Violated: false}), scenario.Marshal(Verdict{Violated: true})
	tests := []struct {
		name     string
		shard    *shard.Part
		cond     string
		observed json.RawMessage
		pass     bool
	}{
		{"whole run, known unsafe held", nil, "p/concurrent", held, false},
		{"whole run, known unsafe broke", nil, "p/concurrent", broke, true},
		{"shard, known unsafe held in its part", &shard.Part{Index: 2, Count: 4}, "p/concurrent", held, true},
		{"shard, known unsafe broke in its part", &shard.Part{Index: 2, Count: 4}, "p/concurrent", broke, true},
		{"shard, a class that must hold broke", &shard.Part{Index: 2, Count: 4}, "p/none", broke, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := st
			s.Shard = tt.shard
			exp, err := Scenario{}.Expect(s)
			if err != nil {
				t.Fatal(err)
			}
			var e json.RawMessage
			for _, x := range exp {
				if x.Condition == tt.cond {
					e = scenario.Marshal(x.Value)
				}
			}
			pass, diffs, err := Scenario{}.Check(tt.cond, e, tt.observed)
			if err != nil || pass != tt.pass {
				t.Errorf("expected %s, observed %s: pass %v (%v, %v), want %v", e, tt.observed, pass, diffs, err, tt.pass)
			}
		})
	}
}
