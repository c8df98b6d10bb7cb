package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/shard"
)

// TestPlaces: a place taken again in the same shard names who took it
// first (a step of the same trial, or another trial: the caller tells);
// another shard's place of the same name is its own.
func TestPlaces(t *testing.T) {
	type take struct {
		shard        int
		place, owner string
	}
	type got struct {
		Prev  string
		Taken bool
	}
	tests := []struct {
		name  string
		takes []take
		want  []got
	}{
		{"fresh places", []take{{0, "a.db", "t1"}, {0, "b.db", "t2"}}, []got{{}, {}}},
		{"one place twice", []take{{0, "a.db", "t1"}, {0, "a.db", "t2"}}, []got{{}, {"t1", true}}},
		{"the last owner is named", []take{{0, "a.db", "t1"}, {0, "a.db", "t2"}, {0, "a.db", "t3"}}, []got{{}, {"t1", true}, {"t2", true}}},
		{"shards ran apart", []take{{1, "a.db", "t1"}, {2, "a.db", "t2"}}, []got{{}, {}}},
		{"the shard and the place do not run together", []take{{1, "2:a.db", "t1"}, {12, ":a.db", "t2"}}, []got{{}, {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Places{}
			var out []got
			for _, tk := range tc.takes {
				prev, taken := p.Take(tk.shard, tk.place, tk.owner)
				out = append(out, got{prev, taken})
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("takes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListed: a fold lists the plan's trials in order, each as Listed.
func TestListed(t *testing.T) {
	ts := []Trial{
		{Class: Points, Condition: "p/points", Index: 1, Point: "x"},
		{Class: Power, Condition: "d/power", Key: "ack#0"},
	}
	want := []shard.Trial{
		{Condition: "p/points", ID: shard.TrialID("p/points", 1)},
		{Condition: "d/power", ID: "d/power@ack#0"},
	}
	if diff := cmp.Diff(want, Listed(ts)); diff != "" {
		t.Errorf("Listed (-want +got):\n%s", diff)
	}
	if got := Listed(nil); got == nil || len(got) != 0 {
		t.Errorf("Listed(nil) = %#v, want an empty list", got)
	}
}

// TestKillWindowUS: the delays are drawn over the discovery's measured
// length from where they start, never an empty span.
func TestKillWindowUS(t *testing.T) {
	tests := []struct {
		name       string
		durationMS float64
		fromUS     int64
		want       int64
	}{
		{"from the start", 12.5, 0, 12500},
		{"from the first point", 12.5, 2500, 10000},
		{"a part of a microsecond is cut", 0.0019, 0, 1},
		{"an instant delivery", 0, 0, 1},
		{"a first point at the end", 3, 3000, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, KillWindowUS(tc.durationMS, tc.fromUS)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
