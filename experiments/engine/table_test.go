package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// TestCounts: a tally reads as its names that count some, sorted by
// name, or as every name in the order given.
func TestCounts(t *testing.T) {
	tests := []struct {
		name   string
		n      map[string]int
		order  []string
		format string
		sep    string
		want   string
	}{
		{name: "sorted", n: map[string]int{"constraint": 1, "busy": 2, "ack": 10}, format: "%s %d", want: "ack 10, busy 2, constraint 1"},
		{name: "empty", n: nil, format: "%s %d", want: ""},
		{name: "a name that counts none is left out", n: map[string]int{"one-job": 2, "one-send": 0, "acked": 1}, format: "%s ×%d", want: "acked ×1, one-job ×2"},
		{name: "in order", n: map[string]int{"b": 2, "a": 1}, order: []string{"b", "a"}, format: "%s: %d", sep: "; ", want: "b: 2; a: 1"},
		{name: "a name the tally lacks", n: map[string]int{"a": 1}, order: []string{"a", "z"}, format: "%s ×%d", sep: ", ", want: "a ×1, z ×0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Counts(tc.n, tc.format)
			if tc.order != nil {
				got = CountsIn(tc.order, tc.n, tc.format, tc.sep)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestByName: a result's conditions by name; the last of a repeated
// name stands.
func TestByName(t *testing.T) {
	res := results.ScenarioResult{Conditions: []results.ConditionResult{{Name: "a", Pass: true}, {Name: "b"}, {Name: "a"}}}
	want := map[string]results.ConditionResult{"a": {Name: "a"}, "b": {Name: "b"}}
	if diff := cmp.Diff(want, ByName(res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
