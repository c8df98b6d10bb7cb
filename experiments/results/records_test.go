package results

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSplit parts records by condition: each part keeps the file order,
// the shard count and the format, and finds only its own processes by id.
func TestSplit(t *testing.T) {
	line := func(n int, cond string) Line { return Line{N: n, Condition: cond} }
	proc := func(id int, cond string) Process {
		return Process{N: id, ProcessRecord: ProcessRecord{ID: id, Condition: cond}}
	}
	r := NewRecords([]Line{line(1, "a"), line(2, "b"), line(3, "a")}, []Process{proc(1, "b"), proc(2, "a"), proc(3, "a")})
	r.Shards, r.Format = 3, 4
	in, rest := r.Split(func(c string) bool { return c == "a" })
	tests := []struct {
		name      string
		got       Records
		lines     []int
		processes []int
	}{
		{"in", in, []int{1, 3}, []int{2, 3}},
		{"rest", rest, []int{2}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines, ids []int
			for _, l := range tt.got.Observations {
				lines = append(lines, l.N)
			}
			for id := 1; id <= 3; id++ {
				if _, ok := tt.got.Process(id); ok {
					ids = append(ids, id)
				}
			}
			if diff := cmp.Diff(tt.lines, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.processes, ids); diff != "" {
				t.Errorf("processes found by id (-want +got):\n%s", diff)
			}
			if tt.got.Shards != r.Shards || tt.got.Format != r.Format {
				t.Errorf("shards %d, format %d; want %d, %d", tt.got.Shards, tt.got.Format, r.Shards, r.Format)
			}
		})
	}
}
