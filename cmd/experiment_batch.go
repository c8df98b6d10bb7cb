package cmd

import (
	"github.com/spf13/cobra"

	"idemlab/experiments/batch"
)

// BatchFlags are the batch scenario's flags on the experiment command.
// Only flags given on the command line override input.json; their values
// are validated with the merged input, before any child runs.
type BatchFlags struct {
	Items  int
	FailAt int
	Trials int
	Modes  []string
}

func bindBatchFlags(c *cobra.Command, f *BatchFlags) {
	c.Flags().IntVar(&f.Items, "items", 0, "batch: number of items (default: batch.items in the input)")
	c.Flags().IntVar(&f.FailAt, "fail-at", 0, "batch: the item whose send fails, 1..items (default: batch.fail_at in the input)")
	c.Flags().IntVar(&f.Trials, "trials", 0, "batch: trials of every condition (default: batch.trials in the input)")
	c.Flags().StringArrayVar(&f.Modes, "mode", nil, "batch: failure mode, before_accept or after_accept, repeatable (default: batch.modes in the input)")
}

// Overrides keeps the flags that were given.
func (f BatchFlags) Overrides(c *cobra.Command) batch.Overrides {
	var o batch.Overrides
	set := func(name string, v int) *int {
		if c.Flags().Changed(name) {
			return &v
		}
		return nil
	}
	o.Items, o.FailAt, o.Trials = set("items", f.Items), set("fail-at", f.FailAt), set("trials", f.Trials)
	if c.Flags().Changed("mode") {
		o.Modes = append([]string{}, f.Modes...)
	}
	return o
}
