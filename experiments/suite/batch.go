package suite

import "idemlab/experiments/batch"

func batchConditions() []string {
	var names []string
	for _, m := range batch.Modes {
		for _, c := range batch.Conditions {
			names = append(names, batch.ConditionName(m, c)+": "+batch.ConditionSummary[c])
		}
	}
	return names
}
