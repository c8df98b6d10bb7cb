package cmd

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"idemlab/experiments/errclass"
	wb "idemlab/worker/batch"
	"idemlab/worker/wire"
)

// ResolveOptions are the resolve command's flags.
type ResolveOptions struct {
	Streams Streams
	DB      string
	Job     string
	Item    string
	Step    string
	// Delivered is the flag's text, parsed by runResolve, so that both
	// "--delivered true" and "--delivered=true" work.
	Delivered string
	Receipt   string
}

func newResolveCmd(s Streams) *cobra.Command {
	opts := &ResolveOptions{Streams: s}
	c := &cobra.Command{
		Use:   "resolve --db PATH --job J --item I --step S --delivered=true|false [--receipt R]",
		Short: "Record what you found at the receiver for a step held as unknown",
		Long: `Resolve a step of a step journal (article 002) whose send is "sent or not,
unknown", after you checked the receiver's records yourself:

  --delivered=true --receipt R   the receiver accepted it: mark the step
                                 SUCCEEDED with its receipt; it is never sent again
  --delivered=false              you confirmed the receiver has no record: delete
                                 the row, so the next run sends it

If you cannot confirm either way, do not run this: leave the step held.
resolve refuses a missing row, a row already SUCCEEDED, and --delivered=true
without --receipt. The journal must not be open in a running batch.
--delivered takes its value as --delivered=true or --delivered true.

` + exitHelp("resolve"),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !c.Flags().Changed("delivered") {
				return fmt.Errorf("%w: --delivered=true or --delivered=false is required", errclass.ErrUsage)
			}
			return runResolve(c, opts)
		},
	}
	c.Flags().StringVar(&opts.DB, "db", "", "step journal file")
	c.Flags().StringVar(&opts.Job, "job", "", "job id")
	c.Flags().StringVar(&opts.Item, "item", "", "item id, e.g. item-041")
	c.Flags().StringVar(&opts.Step, "step", "", "step name, e.g. notify_external")
	c.Flags().StringVar(&opts.Delivered, "delivered", "", "true or false: whether the receiver holds the delivery")
	c.Flags().StringVar(&opts.Receipt, "receipt", "", "the receiver's receipt (required with --delivered=true)")
	return c
}

func runResolve(c *cobra.Command, opts *ResolveOptions) error {
	delivered, err := strconv.ParseBool(opts.Delivered)
	if err != nil {
		return fmt.Errorf("%w: --delivered %q: want true or false, as --delivered=true or --delivered false", errclass.ErrUsage, opts.Delivered)
	}
	k := wire.Key{Job: opts.Job, Item: opts.Item, Step: opts.Step}
	err = wb.ResolveFile(c.Context(), wb.ResolveArgs{DB: opts.DB, Key: k, Delivered: delivered, Receipt: opts.Receipt})
	if errors.Is(err, wb.ErrResolveUsage) {
		return fmt.Errorf("%w: %w", errclass.ErrUsage, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if delivered {
		fmt.Fprintf(opts.Streams.Out, "resolved %s: SUCCEEDED with receipt %s; it will not be sent again\n", k, opts.Receipt)
	} else {
		fmt.Fprintf(opts.Streams.Out, "resolved %s: row deleted; the next run sends it\n", k)
	}
	return nil
}
