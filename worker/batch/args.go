package batch

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"

	"idemlab/worker/store"
	"idemlab/worker/wire"
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

// RunArgs are batch.run's arguments. They are the whole command line of a
// run: the parent renders them with Argv, the worker reads them back with
// ParseRunArgs, and a fold renders them again to check the command line a
// process was recorded with, so Argv must render the same bytes for the
// same values forever.
type RunArgs struct {
	// DB is the journal file. Only journal mode opens it, so only journal
	// mode renders it.
	DB       string
	Mode     string
	Job      string
	Receiver string
	Items    int
	// ChangeItem is the item whose body the run changes; 0 changes none.
	ChangeItem              int
	ValidateMS, TransformMS float64
	// Verify asks the receiver about sends left unfinished before holding
	// them; IdempotencyKey attaches job:item:step to every send.
	Verify, IdempotencyKey bool
	// Backend is empty for SQLite, which keeps the command line as it was
	// before there was a choice; with postgres, DB is a connection string.
	Backend string
	// ReadyFD, when not 0, makes the run a racer: it opens the journal,
	// says it is ready on this descriptor, and waits behind the parent's
	// barrier before its first step.
	ReadyFD int
}

// Argv renders the arguments after the worker name.
func (a RunArgs) Argv() []string {
	args := []string{
		"-mode", a.Mode, "-job", a.Job, "-items", strconv.Itoa(a.Items), "-receiver", a.Receiver,
		"-validate-ms", formatMS(a.ValidateMS), "-transform-ms", formatMS(a.TransformMS),
	}
	if a.Mode == ModeJournal {
		args = append(args, "-db", a.DB)
	}
	if a.ChangeItem != 0 {
		args = append(args, "-change-item", strconv.Itoa(a.ChangeItem))
	}
	if a.Verify {
		args = append(args, "-verify")
	}
	if a.IdempotencyKey {
		args = append(args, "-idempotency-key")
	}
	args = store.BackendArgv(args, a.Backend)
	if a.ReadyFD != 0 {
		args = append(args, "-ready-fd", strconv.Itoa(a.ReadyFD))
	}
	return args
}

// formatMS renders milliseconds in the fewest digits that parse back to
// the same float64.
func formatMS(ms float64) string { return strconv.FormatFloat(ms, 'g', -1, 64) }

// ParseRunArgs reads a run's command line, as Argv renders it, and refuses
// what the worker cannot run.
func ParseRunArgs(args []string) (RunArgs, error) {
	var a RunArgs
	fs := flag.NewFlagSet(WorkerRun, flag.ContinueOnError)
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
	backend := store.BindBackend(fs, &a.Backend)
	fs.IntVar(&a.ReadyFD, "ready-fd", 0, "descriptor to say ready on before waiting for the release (racers)")
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if err := backend(); err != nil {
		return a, err
	}
	switch {
	case a.ReadyFD != 0 && a.ReadyFD < 3:
		return a, fmt.Errorf("-ready-fd %d: want 3 or more", a.ReadyFD)
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

// ResolveArgs are the arguments of resolve, for the worker, the resolve
// command and the parent alike: the parent renders them with Argv and the
// worker reads them back with ParseResolveArgs.
type ResolveArgs struct {
	DB        string
	Key       wire.Key
	Delivered bool
	// Receipt is the receiver's receipt; only a delivered send has one, so
	// only then is it rendered.
	Receipt string
	// Backend is empty for SQLite; with postgres, DB is a connection
	// string.
	Backend string
}

// Argv renders the arguments after the worker name.
func (a ResolveArgs) Argv() []string {
	args := []string{"-db", a.DB, "-job", a.Key.Job, "-item", a.Key.Item, "-step", a.Key.Step, "-delivered=" + strconv.FormatBool(a.Delivered)}
	if a.Delivered {
		args = append(args, "-receipt", a.Receipt)
	}
	return store.BackendArgv(args, a.Backend)
}

// ParseResolveArgs reads a resolve's command line, as Argv renders it.
// What the journal refuses is left to ResolveFile.
func ParseResolveArgs(args []string) (ResolveArgs, error) {
	var a ResolveArgs
	fs := flag.NewFlagSet(WorkerResolve, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.DB, "db", "", "journal file")
	fs.StringVar(&a.Key.Job, "job", "", "job id")
	fs.StringVar(&a.Key.Item, "item", "", "item id")
	fs.StringVar(&a.Key.Step, "step", "", "step name")
	fs.BoolVar(&a.Delivered, "delivered", false, "the receiver holds the delivery")
	fs.StringVar(&a.Receipt, "receipt", "", "the receiver's receipt")
	backend := store.BindBackend(fs, &a.Backend)
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if err := backend(); err != nil {
		return a, err
	}
	if fs.NArg() > 0 {
		return a, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return a, nil
}
