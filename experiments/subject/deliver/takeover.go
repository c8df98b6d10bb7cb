package deliver

import (
	"context"
	"fmt"

	"idemlab/experiments/harness"
	"idemlab/experiments/subject"
	"idemlab/worker/protocol"
)

// takeover runs one takeover trial: the holder pauses at point pt (it
// signals and waits, standing still like a stopped process, its lease
// running out); meanwhile its successor, started on the same job, polls
// the live lease, takes it over after the TTL and finishes the job from
// the journal. Only then is the holder released to run on with its old
// generation. The parent orders the two, so the trial replays.
func (r Runner) takeover(ctx context.Context, cond string, i int, pt string) error {
	t, err := r.newTrial(cond)
	if err != nil {
		return err
	}
	defer t.close()
	fence := !r.Conds[cond].Unfenced
	// The holder starts first, so its token is the trial's first.
	hf, htok := t.sender()
	sf, stok := t.sender()
	holder := harness.Racer{Spec: harness.Spec{
		Scenario: r.Scenario, Condition: cond, Label: subject.Label(i, subject.StepStale),
		Worker: r.Subject.Worker, Args: r.Subject.Takeover.Args(r.Params, hf, false, fence, pt), Exits: []int{protocol.ExitACK},
	}}
	between := func() error {
		spec := harness.Spec{
			Scenario: r.Scenario, Condition: cond, Label: subject.Label(i, subject.StepSuccessor),
			Worker: r.Subject.Worker, Args: r.Subject.Takeover.Args(r.Params, sf, true, fence, ""), Exits: []int{protocol.ExitACK},
		}
		o := r.observation(cond, i, subject.StepSuccessor, t)
		o.Senders, o.Point = tokens(stok), pt
		_, _, err := r.step(ctx, t, spec, o)
		return err
	}
	procs, err := harness.RunBarrierThen(ctx, r.Env.Runner, []harness.Racer{holder}, between)
	if err != nil {
		return fmt.Errorf("%s trial %d: %w", cond, i, err)
	}
	o := r.observation(cond, i, subject.StepStale, t)
	o.Senders, o.ProcessIDs = tokens(htok), []int{procs[0].Record.ID}
	_, err = r.observe(ctx, t, o)
	return err
}
