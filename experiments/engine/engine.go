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
	Seed uint64
	// Parallel is how many deliveries run at once when Slots is nil.
	Parallel int
	// Slots, when set, bounds the deliveries instead, shared with the
	// other runs given the same slots.
	Slots *harness.Slots
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

// Execute runs every unit's discovery, side by side, then every trial
// of a parallel class (races too: each is one job, its racers started and
// released together), a slot each, and beside them the trials of a class
// that waits (Class.Waits), as many at once as there are slots but in
// none, then the sequential classes' trials one at a time, unit by unit in
// order. It returns the trials it ran, the discoveries first, in unit
// order.
func (r Run) Execute(ctx context.Context) ([]Trial, error) {
	slots := r.Slots
	if slots == nil {
		slots = harness.NewSlots(r.Parallel)
	}
	deliver := func(subj Subject, t Trial, found *Found) func(context.Context) error {
		return func(ctx context.Context) error {
			return slots.Do(ctx, func(ctx context.Context) error {
				f, err := subj.Deliver(ctx, t)
				if found != nil {
					*found = f
				}
				return err
			})
		}
	}
	var ran []Trial
	found := make([]Found, len(r.Units))
	var discoveries []func(context.Context) error
	for u, unit := range r.Units {
		if unit.Discovery != "" {
			t := Trial{Class: None, Condition: unit.Discovery}
			discoveries = append(discoveries, deliver(unit.Subject, t, &found[u]))
			ran = append(ran, t)
		}
	}
	if err := harness.RunJobs(ctx, slots.N(), discoveries); err != nil {
		return nil, err
	}
	planned := make([][]Trial, len(r.Units))
	for u, unit := range r.Units {
		ts, err := Plan(ctx, r.Seed, r.Shard, unit.Sets, found[u])
		if err != nil {
			return ran, err
		}
		planned[u] = ts
	}
	var jobs, waits []func(context.Context) error
	for u, ts := range planned {
		for _, t := range ts {
			c, _ := Lookup(t.Class)
			switch {
			case c.Sequential:
				continue
			case c.Waits:
				waits = append(waits, waitJob(r.Units[u].Subject, t))
			default:
				jobs = append(jobs, deliver(r.Units[u].Subject, t, nil))
			}
			ran = append(ran, t)
		}
	}
	both := []func(context.Context) error{
		func(ctx context.Context) error { return harness.RunJobs(ctx, slots.N(), jobs) },
		func(ctx context.Context) error { return harness.RunJobs(ctx, slots.N(), waits) },
	}
	if err := harness.RunJobs(ctx, len(both), both); err != nil {
		return ran, err
	}
	for u, ts := range planned {
		for _, t := range ts {
			if c, _ := Lookup(t.Class); c.Sequential {
				if err := deliver(r.Units[u].Subject, t, nil)(ctx); err != nil {
					return ran, err
				}
				ran = append(ran, t)
			}
		}
	}
	return ran, nil
}

// waitJob delivers trial t of a class that waits, outside the slots.
func waitJob(subj Subject, t Trial) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := subj.Deliver(ctx, t)
		return err
	}
}
