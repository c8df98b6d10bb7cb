package all

import (
	"context"
	"errors"
	"os"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
	wp "idemlab/worker/pattern"
)

// TestCancelledPlanIsAnError plans each scenario under a context a signal
// has already cancelled: planning takes the run's context, so each plan
// is an error that keeps context.Canceled in its chain (the edge classes
// it as an interruption, exit 130) and no plan; and a pattern file's check
// that the cancellation stopped is not a refusal of the user's file.
func TestCancelledPlanIsAnError(t *testing.T) {
	postgres, err := backend.Resolve(nil, map[string]string{backend.FlagBackend: "postgres"})
	if err != nil {
		t.Fatal(err)
	}
	file := map[string]string{"pattern-file": "../../testdata/patterns/single-transaction.json"}
	tests := []struct {
		scenario  string
		overrides map[string]string
		backend   backend.Spec
	}{
		{scenario: "redelivery"},
		{scenario: "batch"},
		{scenario: "claim"},
		{scenario: "explore"},
		{scenario: "durability"},
		{scenario: "durability", backend: postgres},
		{scenario: "pattern", overrides: file},
		{scenario: "pattern", overrides: file, backend: postgres},
	}
	reg := Scenarios(os.DirFS("../.."))
	in, err := suite.ReadInput("../../input.json", reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	planned := 0
	for _, tt := range tests {
		t.Run(tt.scenario+"/"+tt.backend.Name, func(t *testing.T) {
			s, ok := reg.Lookup(tt.scenario)
			if !ok {
				t.Fatalf("no scenario %s", tt.scenario)
			}
			req := scenario.PlanRequest{Backend: tt.backend, Section: in.Sections[tt.scenario], Overrides: tt.overrides, Files: &suite.DiskFiles{}}
			if _, err := s.Plan(context.Background(), req); err != nil {
				t.Fatalf("the request does not plan even uncancelled: %v", err)
			}
			p, err := s.Plan(ctx, req)
			if !errors.Is(err, context.Canceled) || p != nil {
				t.Errorf("plan returned: %v, err = %v; want no plan and an error for which errors.Is(err, context.Canceled) holds", p != nil, err)
			}
			var refusal *wp.Error
			if errors.As(err, &refusal) {
				t.Errorf("err = %v: a refusal of the pattern file, but the check was cancelled, not the file wrong", err)
			}
			planned++
		})
	}
	if planned != len(tests) {
		t.Errorf("%d of %d requests planned", planned, len(tests))
	}
}
