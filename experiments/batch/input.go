package batch

import (
	"fmt"
	"idemlab/worker/protocol"
	"math"
	"strings"

	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
)

// Failure modes of the article: where the injected failure of item K's
// send happens relative to the receiver's accept.
const (
	// BeforeAccept: the receiver answers 503 and records nothing.
	BeforeAccept = receiver.BeforeAccept
	// AfterAccept: the receiver records the delivery, then drops the
	// connection without a reply.
	AfterAccept = receiver.AfterAccept
)

// Modes lists the failure modes in the article's order.
var Modes = []string{BeforeAccept, AfterAccept}

// MaxItems bounds batch.items so a typo cannot start a run of days.
const MaxItems = 1_000_000

// Latency is the simulated cost of each step, in milliseconds.
type Latency struct {
	// Validate is the validate step's latency in ms, 0 to 10000.
	Validate float64 `json:"validate"`
	// Transform is the transform step's latency in ms, 0 to 10000.
	Transform float64 `json:"transform"`
	// Send is the send step's latency in ms, before the receiver
	// answers, 0 to 10000.
	Send float64 `json:"send"`
}

// Input is the batch section of input.json.
type Input struct {
	// JobID is the job id, free of ':' and spaces; the new-job-id
	// condition runs under <job_id>-new.
	JobID string `json:"job_id"`
	// Items is the number of items in the batch (3 steps each), 1 to
	// [MaxItems].
	Items int `json:"items"`
	// FailAt is the item whose send fails once in run 1, 1 to items.
	FailAt int `json:"fail_at"`
	// Modes are the failure modes, at least one: before_accept (the
	// receiver refuses the send), after_accept (it accepts, then the
	// reply is lost).
	Modes []string `json:"modes"`
	// Trials is the number of trials per condition, 1 to [MaxTrials].
	Trials int `json:"trials"`
	// LatencyMS is the simulated latency of each step in ms: the floor
	// the timings are compared with.
	LatencyMS Latency `json:"latency_ms"`
	// ConcurrentModes runs the modes' conditions side by side, one lane
	// per mode; each condition's trials stay in order. It moves the journal's
	// timing ratio (BENCHMARKS.md measures both ways), so it is off by
	// default.
	ConcurrentModes bool `json:"concurrent_modes"`
	// FirstRunLanes is how many trials' first runs go side by side, 1 to
	// [MaxFirstRunLanes]; absent means 1, every process one after
	// another. A first run is never timed against the floor; every later
	// run, the ones the article times, runs alone, after every first run
	// has ended and the file system was synced.
	FirstRunLanes int `json:"first_run_lanes"`
}

// MaxFirstRunLanes bounds batch.first_run_lanes; more first runs side by
// side than this only queue for the same cores.
const MaxFirstRunLanes = 16

// Flag names of the experiment command.
const (
	FlagItems  = "items"
	FlagFailAt = "fail-at"
	FlagTrials = "trials"
	FlagMode   = "mode"
	// FlagConcurrentModes is --concurrent-modes=true|false.
	FlagConcurrentModes = "concurrent-modes"
	// FlagFirstRunLanes is --first-run-lanes N.
	FlagFirstRunLanes = "first-run-lanes"
)

// MaxTrials bounds batch.trials for the same reason as MaxItems.
const MaxTrials = 1000

// ApplyFlags returns in with the overrides in place. --mode takes one mode
// or a comma-separated list, which replaces batch.modes as a whole; a flag
// repeated on the command line keeps its last value, so several modes go
// in one comma list. An unparseable value is an error naming the flag;
// values that parse but do not fit are left to Validate, which names the
// flag beside the field.
func ApplyFlags(in Input, ov map[string]string) (Input, error) {
	for _, f := range []struct {
		name string
		into *int
		hi   int
	}{{FlagItems, &in.Items, MaxItems}, {FlagFailAt, &in.FailAt, MaxItems}, {FlagTrials, &in.Trials, MaxTrials}, {FlagFirstRunLanes, &in.FirstRunLanes, MaxFirstRunLanes}} {
		v, ok, err := scenario.IntFlag(ov, f.name, 1, f.hi)
		if err != nil {
			return in, err
		}
		if ok {
			*f.into = v
		}
	}
	if v, ok, err := scenario.BoolFlag(ov, FlagConcurrentModes); err != nil {
		return in, err
	} else if ok {
		in.ConcurrentModes = v
	}
	if s, ok := ov[FlagMode]; ok {
		var modes []string
		for _, m := range strings.Split(s, ",") {
			modes = append(modes, strings.TrimSpace(m))
		}
		if strings.TrimSpace(s) == "" {
			return in, fmt.Errorf("--%s %q: want %s, or both separated by a comma", FlagMode, s, strings.Join(Modes, " or "))
		}
		in.Modes = modes
	}
	return in, nil
}

// Validate names the first impossible value by its field path, with the
// flag that can also set it, so an override's error points at the flag.
func (in Input) Validate() error {
	if err := protocol.CheckFields("batch", "job_id", in.JobID); err != nil {
		return err
	}
	if strings.TrimSpace(in.JobID) == "" {
		return fmt.Errorf("batch.job_id: must not be empty")
	}
	if strings.ContainsAny(in.JobID, ": \t\n") {
		return fmt.Errorf("batch.job_id %q: must not contain ':' or spaces, since job:item:step keys are built from it", in.JobID)
	}
	if in.Items < 1 || in.Items > MaxItems {
		return fmt.Errorf("batch.items (--items) %d: must be between 1 and %d", in.Items, MaxItems)
	}
	if in.FailAt < 1 || in.FailAt > in.Items {
		return fmt.Errorf("batch.fail_at (--fail-at) %d: must be between 1 and items (%d)", in.FailAt, in.Items)
	}
	if in.Trials < 1 || in.Trials > MaxTrials {
		return fmt.Errorf("batch.trials (--trials) %d: must be between 1 and %d", in.Trials, MaxTrials)
	}
	if in.FirstRunLanes < 0 || in.FirstRunLanes > MaxFirstRunLanes {
		return fmt.Errorf("batch.first_run_lanes (--first-run-lanes) %d: must be between 1 and %d, or absent for 1", in.FirstRunLanes, MaxFirstRunLanes)
	}
	if len(in.Modes) == 0 {
		return fmt.Errorf("batch.modes (--mode): at least one of %s is required", strings.Join(Modes, ", "))
	}
	seen := map[string]bool{}
	for i, m := range in.Modes {
		known := false
		for _, k := range Modes {
			known = known || m == k
		}
		if !known {
			return fmt.Errorf("batch.modes[%d] (--mode) %q: unknown; want %s", i, m, strings.Join(Modes, " or "))
		}
		if seen[m] {
			return fmt.Errorf("batch.modes[%d] (--mode) %q: listed twice", i, m)
		}
		seen[m] = true
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"validate", in.LatencyMS.Validate}, {"transform", in.LatencyMS.Transform}, {"send", in.LatencyMS.Send}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > 10_000 {
			return fmt.Errorf("batch.latency_ms.%s %v: must be between 0 and 10000", f.name, f.v)
		}
	}
	return nil
}
