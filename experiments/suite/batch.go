package suite

import (
	"fmt"

	"idemlab/experiments/batch"
	"idemlab/experiments/harness"
)

// applyBatchOverrides puts the batch flags over input.json and validates
// the merged values, so that --items 20 with fail_at 41 in the file is
// refused before any child runs, naming the field and its flag.
func applyBatchOverrides(in *Input, o batch.Overrides, chosen []scenario) error {
	if in.Batch == nil {
		return nil
	}
	merged := o.Apply(*in.Batch)
	in.Batch = &merged
	for _, s := range chosen {
		if s.name == batch.Name {
			if err := merged.Validate(); err != nil {
				return fmt.Errorf("%w: after flag overrides: %v", harness.ErrUsage, err)
			}
		}
	}
	return nil
}

func batchConditions() []string {
	var names []string
	for _, m := range batch.Modes {
		for _, c := range batch.Conditions {
			names = append(names, batch.ConditionName(m, c)+": "+batch.ConditionSummary[c])
		}
	}
	return names
}
