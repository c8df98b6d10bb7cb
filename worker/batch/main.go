package batch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
)

// Registry names of the two workers; the parent builds command lines with
// them and the fold checks recorded command lines against them.
const (
	WorkerRun     = "batch.run"
	WorkerResolve = "batch.resolve"
)

// Modes of the batch.run worker.
const (
	// ModeJournal keeps the step journal and follows the resume rules.
	ModeJournal = "journal"
	// ModeRerunAll is the article's baseline: no journal, every step again.
	ModeRerunAll = "rerun-all"
)

// RunResult is the report payload of batch.run.
type RunResult struct {
	Mode  string `json:"mode"`
	JobID string `json:"job_id"`
	Items int    `json:"items"`
	Outcome
	// MS is the time of the batch loop alone, measured in the worker like
	// the article's in-process timing; opening the journal is excluded.
	MS     float64            `json:"ms"`
	SQLite *sqlitedb.Settings `json:"sqlite,omitempty"`
}

// RunArgs are batch.run's arguments.
type RunArgs struct {
	DB, Mode, Job, Receiver string
	Items, ChangeItem       int
	ValidateMS, TransformMS float64
	Verify, IdempotencyKey  bool
}

func parseRunArgs(args []string) (RunArgs, error) {
	var a RunArgs
	fs := flag.NewFlagSet("batch.run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.DB, "db", "", "journal file (journal mode)")
	fs.StringVar(&a.Mode, "mode", ModeJournal, "journal or rerun-all")
	fs.StringVar(&a.Job, "job", "", "job id")
	fs.StringVar(&a.Receiver, "receiver", "", "receiver base URL")
	fs.IntVar(&a.Items, "items", 0, "number of items")
	fs.IntVar(&a.ChangeItem, "change-item", 0, "item whose body is changed (0: none)")
	fs.Float64Var(&a.ValidateMS, "validate-ms", 0, "simulated latency of validate")
	fs.Float64Var(&a.TransformMS, "transform-ms", 0, "simulated latency of transform")
	fs.BoolVar(&a.Verify, "verify", false, "verify unknown sends with the receiver")
	fs.BoolVar(&a.IdempotencyKey, "idempotency-key", false, "attach job:item:step to every send")
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	switch {
	case fs.NArg() > 0:
		return a, fmt.Errorf("unexpected arguments %v", fs.Args())
	case a.Mode != ModeJournal && a.Mode != ModeRerunAll:
		return a, fmt.Errorf("-mode %q: want %s or %s", a.Mode, ModeJournal, ModeRerunAll)
	case a.Mode == ModeJournal && a.DB == "":
		return a, errors.New("-db is required in journal mode")
	case a.Job == "" || a.Receiver == "":
		return a, errors.New("-job and -receiver are required")
	case a.Items < 1:
		return a, fmt.Errorf("-items %d: want at least 1", a.Items)
	case a.ChangeItem < 0 || a.ChangeItem > a.Items:
		return a, fmt.Errorf("-change-item %d: want 0..%d", a.ChangeItem, a.Items)
	case !validMS(a.ValidateMS) || !validMS(a.TransformMS):
		return a, errors.New("-validate-ms and -transform-ms must be finite and not negative")
	}
	return a, nil
}

func validMS(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// MSDuration converts milliseconds to a duration.
func MSDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// RunMain is the registered worker "batch.run". It exits 0 when the run
// completed or held items for review, and protocol.ExitStepFailed when a
// step error stopped it.
func RunMain(call *protocol.Call) int {
	a, err := parseRunArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	client := NewClient(a.Receiver)
	lat := map[string]time.Duration{StepValidate: MSDuration(a.ValidateMS), StepTransform: MSDuration(a.TransformMS)}
	cfg := Config{
		Job: a.Job, Sender: client, IdempotencyKey: a.IdempotencyKey, Points: call.Points,
		Local: func(_ context.Context, step string, _ Item) error {
			PreciseSleep(lat[step])
			return nil
		},
	}
	if a.Verify {
		cfg.Verifier = client
	}
	res := RunResult{Mode: a.Mode, JobID: a.Job, Items: a.Items}
	// The receiver's connection is opened while the journal opens: both
	// wait on the kernel, and neither is part of the timed loop.
	pinged := make(chan error, 1)
	go func() { pinged <- client.Ping(ctx) }()
	if a.Mode == ModeJournal {
		j, err := OpenJournal(ctx, a.DB, true)
		if err != nil {
			return call.Fail(err)
		}
		// No deferred Close: a crash point must leave the file as a dead
		// process would, and os.Exit skips defers anyway.
		cfg.Journal = j
		res.SQLite = &j.Settings
	}
	items := Items(a.Items, a.ChangeItem)
	if err := <-pinged; err != nil {
		return call.Fail(err)
	}
	start := time.Now()
	out, runErr := Run(ctx, cfg, items)
	res.MS = float64(time.Since(start).Nanoseconds()) / 1e6
	res.Outcome = out
	if runErr == nil {
		// Only a run that succeeded is ACKed with its file open.
		call.AckOpen(res)
	}
	if cfg.Journal != nil {
		if err := cfg.Journal.Close(); err != nil && runErr == nil {
			runErr = err
		}
	}
	client.CloseIdle()
	var se *StepError
	if errors.As(runErr, &se) {
		fmt.Fprintf(call.Stderr, "worker %s: %v\n", call.Name, runErr)
		return call.Finish(res, protocol.ExitStepFailed)
	}
	if runErr != nil {
		return call.Fail(runErr)
	}
	return call.Finish(res, protocol.ExitACK)
}

// ResolveResult is the report payload of batch.resolve.
type ResolveResult struct {
	Key       string `json:"key"`
	Delivered bool   `json:"delivered"`
	Receipt   string `json:"receipt,omitempty"`
}

// ResolveArgs are the arguments of resolve, for the worker and the
// command alike.
type ResolveArgs struct {
	DB        string
	Key       Key
	Delivered bool
	Receipt   string
}

// ErrResolveUsage marks a resolve refused before or by the journal: a bad
// argument or one of the article's refusals.
var ErrResolveUsage = errors.New("resolve refused")

// ResolveFile opens the journal at a.DB and resolves a.Key. Every refusal
// and bad argument wraps ErrResolveUsage; other errors are failures.
func ResolveFile(ctx context.Context, a ResolveArgs) error {
	if a.DB == "" || a.Key.Job == "" || a.Key.Item == "" || a.Key.Step == "" {
		return fmt.Errorf("%w: db, job, item and step are all required", ErrResolveUsage)
	}
	if st, err := os.Stat(a.DB); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%w: db %s: no such journal file", ErrResolveUsage, a.DB)
	}
	j, err := OpenJournal(ctx, a.DB, false)
	if errors.Is(err, ErrNotJournal) {
		return fmt.Errorf("%w: %w", ErrResolveUsage, err)
	}
	if sqlitedb.IsBusy(err) {
		return fmt.Errorf("%w: db %s is locked, most likely by a running batch; resolve after it stops: %w", ErrResolveUsage, a.DB, err)
	}
	if err != nil {
		return err
	}
	err = j.Resolve(ctx, a.Key, a.Delivered, a.Receipt)
	cerr := j.Close()
	if errors.Is(err, ErrNoRow) || errors.Is(err, ErrAlreadySucceeded) || errors.Is(err, ErrReceiptRequired) {
		return fmt.Errorf("%w: %w", ErrResolveUsage, err)
	}
	if err != nil {
		return err
	}
	return cerr
}

// ResolveMain is the registered worker "batch.resolve": resolve run as its
// own process, as a person would run the command, so the harness records
// it with every other process.
func ResolveMain(call *protocol.Call) int {
	var a ResolveArgs
	fs := flag.NewFlagSet("batch.resolve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.DB, "db", "", "journal file")
	fs.StringVar(&a.Key.Job, "job", "", "job id")
	fs.StringVar(&a.Key.Item, "item", "", "item id")
	fs.StringVar(&a.Key.Step, "step", "", "step name")
	fs.BoolVar(&a.Delivered, "delivered", false, "the receiver holds the delivery")
	fs.StringVar(&a.Receipt, "receipt", "", "the receiver's receipt")
	if err := fs.Parse(call.Args); err != nil {
		return call.Usage(err)
	}
	err := ResolveFile(context.Background(), a)
	if errors.Is(err, ErrResolveUsage) {
		return call.Usage(err)
	}
	if err != nil {
		return call.Fail(err)
	}
	return call.Finish(ResolveResult{Key: a.Key.String(), Delivered: a.Delivered, Receipt: a.Receipt}, protocol.ExitACK)
}
