package engine

import (
	"context"
	"fmt"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/shard"
)

// Subject is what one delivery runs: a built-in Go worker or a pattern's
// file or program. Deliver runs trial t from a fresh database to the
// parent's record of it; for the discovery trial (class None) it reports
// the points the delivery passed and the kill window.
type Subject interface {
	Deliver(ctx context.Context, t Trial) (Found, error)
}

// Unit is one subject and its sets: Discovery names the condition of its
// discovery delivery, "" for a subject that plans without one.
type Unit struct {
	Subject   Subject
	Discovery string
	Sets      []Set
}

// Run is one run of the engine over units.
type Run struct {
	Seed     uint64
	Parallel int
	// Shard is the part of the plan this run runs; nil runs it all.
	Shard *shard.Part
	Units []Unit
}

// Plan lists the trials of sets from what discovery found, in order,
// with the shard's filter applied: every trial the run runs but the
// discovery. A cancelled ctx stops it.
func Plan(ctx context.Context, seed uint64, part *shard.Part, sets []Set, found Found) ([]Trial, error) {
	var out []Trial
	for _, s := range sets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, ok := Lookup(s.Class)
		if !ok {
			return nil, fmt.Errorf("%w: condition %s: fault class %q is not registered", errclass.ErrHarness, s.Condition, s.Class)
		}
		plan := c.Plan
		if s.Sweep != nil {
			plan = planSweep
		}
		for _, t := range plan(Input{Set: s, Seed: seed, Found: found}) {
			if part.Runs(t.ID()) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// Execute runs every unit's discovery, then every parallel class's trials,
// Parallel at a time through harness.RunJobs, then the sequential classes'
// one at a time, unit by unit in order. It returns the trials it ran, the
// discoveries first.
func (r Run) Execute(ctx context.Context) ([]Trial, error) {
	var ran []Trial
	planned := make([][]Trial, len(r.Units))
	for u, unit := range r.Units {
		var found Found
		if unit.Discovery != "" {
			t := Trial{Class: None, Condition: unit.Discovery}
			f, err := unit.Subject.Deliver(ctx, t)
			if err != nil {
				return ran, err
			}
			ran, found = append(ran, t), f
		}
		ts, err := Plan(ctx, r.Seed, r.Shard, unit.Sets, found)
		if err != nil {
			return ran, err
		}
		planned[u] = ts
	}
	var jobs []func(context.Context) error
	for u, ts := range planned {
		for _, t := range ts {
			if c, _ := Lookup(t.Class); !c.Sequential {
				subj := r.Units[u].Subject
				jobs = append(jobs, func(ctx context.Context) error {
					_, err := subj.Deliver(ctx, t)
					return err
				})
				ran = append(ran, t)
			}
		}
	}
	if err := harness.RunJobs(ctx, r.Parallel, jobs); err != nil {
		return ran, err
	}
	for u, ts := range planned {
		for _, t := range ts {
			if c, _ := Lookup(t.Class); c.Sequential {
				if _, err := r.Units[u].Subject.Deliver(ctx, t); err != nil {
					return ran, err
				}
				ran = append(ran, t)
			}
		}
	}
	return ran, nil
}
