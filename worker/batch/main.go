package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"idemlab/worker/precise"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// MSDuration converts milliseconds to a duration.
func MSDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// RunMain is the registered worker "batch.run". It exits 0 when the run
// completed or held items for review, and protocol.ExitStepFailed when a
// step error stopped it.
func RunMain(call *protocol.Call) int {
	a, err := ParseRunArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	client := wire.NewClient(a.Receiver)
	lat := map[string]time.Duration{StepValidate: MSDuration(a.ValidateMS), StepTransform: MSDuration(a.TransformMS)}
	cfg := Config{
		Job: a.Job, Sender: client, IdempotencyKey: a.IdempotencyKey, Points: call.Points,
		Local: func(_ context.Context, step string, _ Item) error {
			precise.Sleep(lat[step])
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
		j, err := OpenJournalOn(ctx, a.Backend, a.DB, true)
		if err != nil {
			return call.Fail(err)
		}
		// No deferred Close: a crash point must leave the file as a dead
		// process would, and os.Exit skips defers anyway.
		cfg.Journal = j
		if res.Postgres = j.Postgres; res.Postgres == nil {
			res.SQLite = &j.Settings
		}
	}
	items := Items(a.Items, a.ChangeItem)
	if err := <-pinged; err != nil {
		return call.Fail(err)
	}
	if a.ReadyFD != 0 {
		if err := protocol.AwaitRelease(a.ReadyFD, call.Stdin); err != nil {
			return call.Fail(err)
		}
	}
	start := time.Now()
	out, runErr := Run(ctx, cfg, items)
	res.MS = float64(time.Since(start).Nanoseconds()) / 1e6
	res.Outcome = out
	if cfg.Journal != nil {
		res.SerializationRetries = cfg.Journal.Retries
	}
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

// ErrResolveUsage marks a resolve refused before or by the journal: a bad
// argument or one of the article's refusals.
var ErrResolveUsage = errors.New("resolve refused")

// ResolveFile opens the journal at a.DB and resolves a.Key. Every refusal
// and bad argument wraps ErrResolveUsage; other errors are failures.
func ResolveFile(ctx context.Context, a ResolveArgs) error {
	if a.DB == "" || a.Key.Job == "" || a.Key.Item == "" || a.Key.Step == "" {
		return fmt.Errorf("%w: db, job, item and step are all required", ErrResolveUsage)
	}
	if store.Missing(a.Backend, a.DB) {
		return fmt.Errorf("%w: db %s: no such journal file", ErrResolveUsage, a.DB)
	}
	j, err := OpenJournalOn(ctx, a.Backend, a.DB, false)
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
	a, err := ParseResolveArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	err = ResolveFile(context.Background(), a)
	if errors.Is(err, ErrResolveUsage) {
		return call.Usage(err)
	}
	if err != nil {
		return call.Fail(err)
	}
	return call.Finish(ResolveResult{Key: a.Key.String(), Delivered: a.Delivered, Receipt: a.Receipt}, protocol.ExitACK)
}
