package results

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFirstShard(t *testing.T) {
	tests := []struct {
		name   string
		shards []int
		want   int
	}{
		{"one run", []int{0, 0}, 0},
		{"no line", nil, 0},
		{"merged, lowest last", []int{3, 2, 3, 1}, 1},
		{"merged, lowest first", []int{2, 4, 3}, 2},
	}
	for _, tt := range tests {
		var r Records
		for _, sh := range tt.shards {
			r.Observations = append(r.Observations, Line{Shard: sh})
		}
		if got := r.FirstShard(); got != tt.want {
			t.Errorf("%s: FirstShard() = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestSameDiscovery(t *testing.T) {
	tests := []struct {
		name      string
		got, want []string
		findings  []string
	}{
		{"same", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"both empty", nil, []string{}, nil},
		{"other points", []string{"a"}, []string{"a", "b"}, []string{"shard 2's discovery passed [a], but shard 1's [a b]: the shards ran different code or inputs"}},
		{"other order", []string{"b", "a"}, []string{"a", "b"}, []string{"shard 2's discovery passed [b a], but shard 1's [a b]: the shards ran different code or inputs"}},
	}
	for _, tt := range tests {
		var c Checker
		SameDiscovery(&c, Line{N: 7, Shard: 2}, 1, "discovery passed", tt.got, tt.want)
		var got []string
		for _, f := range c.Findings {
			got = append(got, f.Message)
		}
		if diff := cmp.Diff(tt.findings, got); diff != "" {
			t.Errorf("%s: findings (-want +got):\n%s", tt.name, diff)
		}
	}
}
