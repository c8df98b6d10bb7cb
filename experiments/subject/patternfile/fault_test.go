package patternfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/engine"
	wp "idemlab/worker/pattern"
)

// A condition of the points class and one of the power class.
var (
	condPoints = Condition{Fault: wp.FaultPoints}
	condPower  = Condition{Fault: wp.FaultPower}
)

// TestFirstFaultFromFields: what a trial does to its first delivery is
// read from its fields, whatever its label says; a power condition makes
// its point a cut (after the ACK, ack-open, at a sync) and its crash a
// power crash; a racer takes its own hit.
func TestFirstFaultFromFields(t *testing.T) {
	tests := []struct {
		name   string
		c      Condition
		o      Observation
		worker int
		want   fault
	}{
		{"a point", condPoints, Observation{Kind: "any-label", Point: "p2"}, 0, fault{At: "p2"}},
		{"a point named ack outside power", condPoints, Observation{Point: engine.PointACK}, 0, fault{At: engine.PointACK}},
		{"a hit", condPoints, Observation{K: 3}, 0, fault{Hit: 3}},
		{"a delay", condPoints, Observation{KillUS: 700}, 0, fault{KillUS: 700}},
		{"a racer with a hit", condPoints, Observation{Racers: 2, RaceCrashK: []int{0, 2}}, 1, fault{Hit: 2}},
		{"a racer without", condPoints, Observation{Racers: 2, RaceCrashK: []int{0, 2}}, 0, fault{}},
		{"a racer past the hits", condPoints, Observation{Racers: 3, RaceCrashK: []int{1}}, 2, fault{}},
		{"a power cut at a point", condPower, Observation{Kind: KindPower, Point: "p1", Model: "drop"}, 0, fault{At: "p1", Power: true}},
		{"after the ACK", condPower, Observation{Kind: KindPower, Point: engine.PointACK}, 0, fault{ACK: true, Power: true}},
		{"ack-open", condPower, Observation{Kind: KindPower, Point: engine.PointACKOpen}, 0, fault{AckOpen: true, Power: true}},
		{"at a sync", condPower, Observation{Kind: KindPower, Point: "sync-1-before"}, 0, fault{Sync: true, Power: true}},
		{"nothing", condPoints, Observation{Kind: KindDiscovery}, 0, fault{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstFault(tt.c, tt.o, tt.worker)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(fault{})); diff != "" {
				t.Errorf("firstFault (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKillAt: a program is killed at the fault's point, at its hit, or
// for ack-open at the discovery's last point, and nowhere else.
func TestKillAt(t *testing.T) {
	type at struct {
		name string
		n    int
	}
	tests := []struct {
		name  string
		f     fault
		kills []at
		spare []at
	}{
		{"a point", fault{At: "b"}, []at{{"b", 2}}, []at{{"a", 1}, {"c", 2}}},
		{"a hit", fault{Hit: 2}, []at{{"x", 2}}, []at{{"x", 1}, {"x", 3}}},
		{"ack-open", fault{AckOpen: true, Power: true}, []at{{"last", 3}}, []at{{"b", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.f.killAt("last")
			if k == nil {
				t.Fatal("no kill")
			}
			for _, a := range tt.kills {
				if !k(a.name, a.n) {
					t.Errorf("not killed at %s (%d)", a.name, a.n)
				}
			}
			for _, a := range tt.spare {
				if k(a.name, a.n) {
					t.Errorf("killed at %s (%d)", a.name, a.n)
				}
			}
		})
	}
	for _, f := range []fault{{}, {KillUS: 5}, {ACK: true, Power: true}, {Sync: true, Power: true}} {
		if f.killAt("last") != nil {
			t.Errorf("%+v kills at a point", f)
		}
	}
}

// TestApplies: a trial field the pattern subject cannot apply is refused,
// naming the field; what it applies passes.
func TestApplies(t *testing.T) {
	tests := []struct {
		name            string
		c               Condition
		t               engine.Trial
		program, broker bool
		field           string // "" when it applies
	}{
		{"a point", condPoints, engine.Trial{Point: "p"}, false, false, ""},
		{"racers and their hits", condPoints, engine.Trial{Racers: 2, CrashK: []int{0, 1}}, false, false, ""},
		{"a power cut", condPower, engine.Trial{Point: "p", Model: "drop"}, false, false, ""},
		{"a program's sync cut on the mount", condPower, engine.Trial{Point: "sync-1-before", Model: "keep", Layer: engine.LayerFS}, true, false, ""},
		{"racers killed after a delay", condPoints, engine.Trial{Racers: 2, KillsUS: []int64{0, 9}}, false, false, "kills_us"},
		{"no racer killed", condPoints, engine.Trial{Racers: 2, KillsUS: []int64{0, 0}}, false, false, ""},
		{"a sweep's seed", condPower, engine.Trial{Point: "p", Seed: 1}, false, false, "seed"},
		{"a model outside power", condPoints, engine.Trial{Point: "p", Model: "drop"}, false, false, "model"},
		{"the filesystem layer under the VFS", condPower, engine.Trial{Point: "p", Layer: engine.LayerFS}, false, false, "layer"},
		{"racers with a point", condPoints, engine.Trial{Racers: 2, Point: "p"}, false, false, "racers"},
		{"racers on a broker", condPoints, engine.Trial{Racers: 2}, false, true, "racers"},
		{"hits without racers", condPoints, engine.Trial{CrashK: []int{1}}, false, false, "crash_k"},
		{"power on a broker", condPower, engine.Trial{Point: "p", Model: "drop"}, false, true, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := applies(tt.c, tt.t, tt.program, tt.broker)
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.field != "" && (!errors.Is(err, errNotApplied) || !strings.Contains(err.Error(), "field "+tt.field+":")):
				t.Errorf("got %v, want field %s refused", err, tt.field)
			}
		})
	}
}

// TestRunsEveryRegisteredPatternClass: every class with a pattern label
// runs, and a kind the registry does not hold does not.
func TestRunsEveryRegisteredPatternClass(t *testing.T) {
	for _, c := range engine.Classes {
		if err := runs(c.Kind); (err == nil) != (c.Labels.Pattern != "") {
			t.Errorf("class %s (pattern label %q): runs says %v", c.Kind, c.Labels.Pattern, err)
		}
	}
	if runs("not-registered") == nil {
		t.Error("an unregistered kind runs")
	}
}
