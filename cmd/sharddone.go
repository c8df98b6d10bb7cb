package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"idemlab/experiments/errclass"
	"idemlab/experiments/merge"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/experiments/suite"
)

// shardJob is the part a run's --shard names, nil for a run of the whole
// plan or a --shard the suite will refuse.
func shardJob(opts *ExperimentOptions) *shard.Part {
	part, err := scenario.ShardOverride(opts.Overrides)
	if err != nil {
		return nil
	}
	return part
}

// shardAlreadyDone answers a shard run whose --out is taken: before it
// runs (taken nil), or when another run published first (taken names
// this run's own results). A folder that holds this very job's finished
// run makes the job done, exit 0 (1 when that run failed its
// expectations, as it exited then), and this run's own results, if any,
// are discarded. Anything else is exit 2: before the run, --out exists;
// after it, #27's rule, the results kept where the error says.
func shardAlreadyDone(ctx context.Context, opts *ExperimentOptions, exe string, part *shard.Part, taken *results.TakenError) (*results.Results, error) {
	reg := opts.hooks.Registry
	chosen, err := suite.Choose(reg, opts.Scenarios)
	if err != nil {
		return nil, err
	}
	in, err := suite.ReadInput(opts.Input, reg)
	if err != nil {
		return nil, err
	}
	sum, err := results.HashFile(exe)
	if err != nil {
		return nil, fmt.Errorf("%w: hash own executable: %w", errclass.ErrHarness, err)
	}
	job := merge.Job{Part: *part, Overrides: opts.Overrides, InputSHA256: in.SHA256, ExecutableSHA256: sum}
	for _, s := range chosen {
		job.Scenarios = append(job.Scenarios, s.Name())
	}
	res, why, err := merge.Done(ctx, reg, opts.Out, job)
	if err != nil {
		return nil, err
	}
	if len(why) > 0 {
		not := fmt.Sprintf("it is not shard %s of this run: %s", part, strings.Join(why, "; "))
		if taken != nil {
			return nil, fmt.Errorf("%w (%s)", taken, not)
		}
		return nil, fmt.Errorf("%w: --out %s: already exists, and %s; choose a new folder", errclass.ErrUsage, opts.Out, not)
	}
	if taken != nil {
		if err := os.RemoveAll(taken.Staging); err != nil {
			return nil, fmt.Errorf("%w: remove this run's copy %s: %w", errclass.ErrHarness, taken.Staging, err)
		}
	}
	fmt.Fprintf(opts.Streams.Out, "shard %s already done in %s\n", part, opts.Out)
	if !res.Pass {
		return res, fmt.Errorf("%w: shard %s in %s ran before, with pass: false", errclass.ErrExpectation, part, opts.Out)
	}
	return res, nil
}

// takenBy is the error's TakenError, when another run published --out.
func takenBy(err error) *results.TakenError {
	var t *results.TakenError
	if errors.As(err, &t) {
		return t
	}
	return nil
}
