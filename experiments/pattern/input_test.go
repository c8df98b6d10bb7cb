package pattern

import (
	"strings"
	"testing"

	"idemlab/experiments/scenario"
)

// TestInputLimits holds the section's bounds to one table: parallel takes
// what --parallel takes (scenario.MaxParallel), so an input and a flag
// that say the same are both accepted or both refused.
func TestInputLimits(t *testing.T) {
	ok := func() Input { return Input{Files: []string{"p.json"}, EventID: "e"} }
	cases := []struct {
		name string
		edit func(*Input)
		want string // "" accepts
	}{
		{"defaults", func(*Input) {}, ""},
		{"parallel at the flag's bound", func(in *Input) { in.Parallel = scenario.MaxParallel }, ""},
		{"parallel over it", func(in *Input) { in.Parallel = scenario.MaxParallel + 1 }, "pattern.parallel: 65"},
		{"negative parallel", func(in *Input) { in.Parallel = -1 }, "pattern.parallel: -1"},
		{"trials over the bound", func(in *Input) { in.Trials = MaxTrials + 1 }, "pattern.trials"},
		{"one racer", func(in *Input) { in.Racers = []int{1} }, "pattern.racers[0]: 1"},
		{"no files", func(in *Input) { in.Files = nil }, "pattern.files: empty"},
		{"a sector", func(in *Input) { in.FaultUnit = 512 }, ""},
		{"a page", func(in *Input) { in.FaultUnit = 4096 }, ""},
		{"neither", func(in *Input) { in.FaultUnit = 1024 }, "pattern.fault_unit 1024: want 512 or 4096"},
		{"by flag", func(in *Input) { in.FaultUnit, in.from = 2048, map[string]string{"fault_unit": "--fault-unit"} }, "--fault-unit 2048: want 512 or 4096"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := ok()
			c.edit(&in)
			err := in.validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
}
