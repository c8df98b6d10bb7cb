package merge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/shard"
)

// fake is shard i of n as verify would have read it: made by exe from
// input, having run ran of scenario s.
func fake(i, n int, exe, input string, ran ...string) part {
	r := &results.Results{
		Shard: &shard.Part{Index: i, Count: n}, Code: results.Code{ExecutableSHA256: exe},
		Inputs:    results.Inputs{SHA256: input},
		Scenarios: []results.ScenarioResult{{Name: "s", Settings: []byte(`{"seed":1}`)}},
	}
	d := &results.Results{Scenarios: []results.ScenarioResult{{Name: "s", Plan: &results.PlanResult{SHA256: "plan", Ran: ran}}}}
	o := &review.Outcome{Derived: d, Executables: map[string]string{review.BuiltInWorkers: exe}}
	return part{dir: fmt.Sprintf("dir-%d-%s", i, exe), r: r, o: o}
}

// ran sets what p's processes ran as name (BuiltInWorkers, or a
// program's), as its process lines record it; "" says it started none.
func ran(p part, name, sum string) part {
	e := map[string]string{}
	for k, v := range p.o.Executables {
		e[k] = v
	}
	if sum == "" {
		delete(e, name)
	} else {
		e[name] = sum
	}
	o := *p.o
	o.Executables = e
	p.o = &o
	return p
}

func TestFit(t *testing.T) {
	tests := []struct {
		name  string
		parts []part
		want  []string
	}{
		{"the n parts of one plan", []part{fake(1, 3, "x", "in"), fake(2, 3, "x", "in"), fake(3, 3, "x", "in")}, nil},
		{"one of another binary", []part{fake(1, 3, "x", "in"), fake(2, 3, "y", "in"), fake(3, 3, "x", "in")}, []string{"dir-2-y (shard 2/3) was made by another binary"}},
		{"the first of another binary", []part{fake(1, 3, "y", "in"), fake(2, 3, "x", "in"), fake(3, 3, "x", "in")}, []string{"dir-1-y (shard 1/3) was made by another binary"}},
		{"one of another input", []part{fake(1, 2, "x", "in"), fake(2, 2, "x", "other")}, []string{"dir-2-x (shard 2/2) ran another input"}},
		{"one of another n", []part{fake(1, 2, "x", "in"), fake(2, 3, "x", "in"), fake(2, 2, "x", "in")}, []string{"dir-2-x (shard 2/3) is a shard of 3, the others of 2"}},
		// results.json names the others' binary, but its workers ran
		// another, as their process lines record.
		{"one whose workers ran another binary", []part{fake(1, 3, "x", "in"), ran(fake(2, 3, "x", "in"), review.BuiltInWorkers, "y"), fake(3, 3, "x", "in")},
			[]string{"dir-2-x (shard 2/3) ran another executable: its raw-processes.jsonl record y for its built-in workers, the others' x"}},
		{"one whose program is another file", []part{ran(fake(1, 2, "x", "in"), "program python3", "p1"), ran(fake(2, 2, "x", "in"), "program python3", "p2")},
			[]string{"dir-2-x (shard 2/2) ran another executable: its raw-processes.jsonl record p2 for its program python3"}},
		{"one that started no program", []part{ran(fake(1, 2, "x", "in"), "program python3", "p1"), fake(2, 2, "x", "in")}, nil},
		{"one missing, one twice", []part{fake(1, 3, "x", "in"), fake(1, 3, "x", "in"), fake(3, 3, "x", "in")}, []string{"shard 1/3 is given twice: dir-1-x and dir-1-x", "shard 2/3 is missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fit(tt.parts)
			if len(got) != len(tt.want) {
				t.Fatalf("fit = %q, want %d problem(s) %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d is %q, want it to begin %q", i, got[i], w)
				}
			}
		})
	}
}

// TestUnion: the shards' trials are the plan's, each once, and a
// missing trial is charged to the shard that runs it.
func TestUnion(t *testing.T) {
	var plan []shard.Trial
	for i := range 12 {
		plan = append(plan, shard.Trial{Condition: "c", ID: shard.TrialID("c", i)})
	}
	share := func(i int, drop string, add ...string) part {
		var ran []string
		for _, tr := range plan {
			if shard.Of(tr.ID, 2) == i && tr.ID != drop {
				ran = append(ran, tr.ID)
			}
		}
		return fake(i, 2, "x", "in", append(ran, add...)...)
	}
	first := func(i int) string {
		for _, tr := range plan {
			if shard.Of(tr.ID, 2) == i {
				return tr.ID
			}
		}
		return ""
	}
	tests := []struct {
		name  string
		parts []part
		want  []string
	}{
		{"complete", []part{share(1, ""), share(2, "")}, nil},
		{"a trial in both", []part{share(1, "", first(2)), share(2, "")}, []string{"s trial " + first(2) + " is in both dir-1-x (shard 1/2) and dir-2-x (shard 2/2)"}},
		{"a trial of no plan", []part{share(1, "", "c#99"), share(2, "")}, []string{"dir-1-x (shard 1/2) ran s trial c#99, which is not in the plan"}},
		{"a trial missing", []part{share(1, ""), share(2, first(2))}, []string{"dir-2-x (shard 2/2) lacks 1 s trial(s) of the plan: " + first(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, union("s", plan, tt.parts, 0)); d != "" {
				t.Errorf("union (-want +got):\n%s", d)
			}
		})
	}
}
