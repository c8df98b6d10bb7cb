package all

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// TestEveryScenarioPricesItsProcesses: each registered scenario declares
// what one of its processes costs, so the ETA prices none of them at the
// default.
func TestEveryScenarioPricesItsProcesses(t *testing.T) {
	for _, s := range Scenarios(os.DirFS("../..")) {
		if c := s.Caps().Cost; c <= 0 {
			t.Errorf("scenario %s declares a cost of %v per process", s.Name(), c)
		}
	}
}

// declared is what a plan declares about how it runs, its preflight
// read as whether it has one.
type declared struct {
	SideBySide       bool
	Parallel, Bound  int
	Preflight        bool
	Slots, SlotsFlag int
}

// TestPlansDeclareHowTheyRun: each scenario's plan declares how the suite
// schedules it and whether it needs a preflight, from its settings: the
// trial scenarios side by side, one at a time where their trials share a
// server or a power-loss mount; a preflight where a broker of the run's
// own is started; the rest one process after another, needing nothing.
func TestPlansDeclareHowTheyRun(t *testing.T) {
	postgres, err := backend.Resolve(nil, map[string]string{backend.FlagBackend: "postgres"})
	if err != nil {
		t.Fatal(err)
	}
	const flag = 5
	file := "../../testdata/patterns/single-transaction.json"
	tests := []struct {
		scenario  string
		parallel  int // the section's parallel, when > 0
		overrides map[string]string
		backend   backend.Spec
		want      declared
	}{
		{scenario: "redelivery", want: declared{}},
		{scenario: "redelivery", overrides: map[string]string{"broker": "nats"}, want: declared{Preflight: true}},
		{scenario: "batch", want: declared{}},
		{scenario: "claim", want: declared{}},
		{scenario: "explore", want: declared{SideBySide: true, Slots: scenario.ParallelOf(0, 0), SlotsFlag: flag}},
		{scenario: "explore", parallel: 3, want: declared{SideBySide: true, Parallel: 3, Slots: 3, SlotsFlag: flag}},
		{scenario: "explore", overrides: map[string]string{"broker": "nats"}, want: declared{SideBySide: true, Preflight: true, Slots: scenario.ParallelOf(0, 0), SlotsFlag: flag}},
		{scenario: "durability", want: declared{SideBySide: true, Slots: scenario.ParallelOf(0, 0), SlotsFlag: flag}},
		{scenario: "durability", overrides: map[string]string{"power-layer": "fs"}, want: declared{SideBySide: true, Bound: 1, Slots: 1, SlotsFlag: 1}},
		{scenario: "durability", backend: postgres, want: declared{SideBySide: true, Bound: 1, Slots: 1, SlotsFlag: 1}},
		{scenario: "pattern", overrides: map[string]string{"pattern-file": file}, want: declared{SideBySide: true, Slots: scenario.ParallelOf(0, 0), SlotsFlag: flag}},
		{scenario: "pattern", parallel: 2, overrides: map[string]string{"pattern-file": file}, want: declared{SideBySide: true, Parallel: 2, Slots: 2, SlotsFlag: flag}},
		{scenario: "pattern", overrides: map[string]string{"pattern-file": file, "broker": "nats"}, want: declared{SideBySide: true, Preflight: true, Slots: scenario.ParallelOf(0, 0), SlotsFlag: flag}},
	}
	reg := Scenarios(os.DirFS("../.."))
	in, err := suite.ReadInput("../../input.json", reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		s, ok := reg.Lookup(tt.scenario)
		if !ok {
			t.Fatalf("no scenario %s", tt.scenario)
		}
		section := in.Sections[tt.scenario]
		if tt.parallel > 0 {
			m := map[string]any{}
			if section != nil {
				if err := json.Unmarshal(section, &m); err != nil {
					t.Fatal(err)
				}
			}
			m["parallel"] = tt.parallel
			section = scenario.Marshal(m)
		}
		req := scenario.PlanRequest{Backend: tt.backend, Section: section, Overrides: tt.overrides, Files: &suite.DiskFiles{}}
		p, err := s.Plan(context.Background(), req)
		if err != nil {
			t.Fatalf("%s parallel %d %v: plan: %v", tt.scenario, tt.parallel, tt.overrides, err)
		}
		c := p.Caps()
		got := declared{SideBySide: c.SideBySide, Parallel: c.Parallel, Bound: c.Bound, Preflight: c.Preflight != nil, Slots: c.Slots(0), SlotsFlag: c.Slots(flag)}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s parallel %d %v %s: declared (-want +got):\n%s", tt.scenario, tt.parallel, tt.overrides, tt.backend.Name, d)
		}
	}
}
