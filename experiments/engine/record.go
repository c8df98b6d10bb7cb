package engine

import (
	"fmt"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
)

// Record writes one trial's line of observations.jsonl: o is the
// subject's payload, the scenario's own observation type, whose scenario
// and condition fields name the line's trial.
func Record(r *results.Recorder, o any) error {
	if err := r.Observe(o); err != nil {
		return fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
	}
	return nil
}

// Each reads a scenario's observation lines back, in the order recorded:
// each line decoded strictly into the scenario's type O, its condition
// looked up in conds. A line that does not decode ("not what: …"), or
// names no condition of conds, is a finding of c and is passed over; each
// is called with every other line, its observation and its condition.
func Each[O, C any](c *results.Checker, rec results.Records, what string, conds map[string]C, each func(l results.Line, o O, cond C)) {
	for _, l := range rec.Observations {
		var o O
		if err := results.DecodeStrict(l.Raw, &o); err != nil {
			c.Obs(l, "", "not %s: %v", what, err)
			continue
		}
		cond, ok := conds[l.Condition]
		if !ok {
			c.Obs(l, "condition", "%q is not a condition in the settings", l.Condition)
			continue
		}
		each(l, o, cond)
	}
}
