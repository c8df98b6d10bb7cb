package redelivery

import (
	"errors"
	"flag"
	"io"

	"idemlab/worker/store"
)

// Args are the delivering worker's arguments: the file, the pattern and
// the event. The parent renders them with Argv, the worker reads them back
// with ParseArgs, and the fold renders them again to check each recorded
// command line, so the three agree by construction.
type Args struct {
	// DB is a SQLite file, or a PostgreSQL connection string when Backend
	// is postgres.
	DB      string
	Pattern Pattern
	Event   Event
	// Backend is empty for SQLite, which keeps the command line as it was
	// before there was a choice.
	Backend string
}

// Argv is the command line after the worker name.
func (a Args) Argv() []string {
	argv := []string{"-db", a.DB, "-pattern", string(a.Pattern), "-event-id", a.Event.ID, "-job-key", a.Event.JobKey}
	return store.BackendArgv(argv, a.Backend)
}

// Bind declares the arguments' flags on fs and returns the check to run
// after fs.Parse. A worker that takes them among its own, such as
// explore's racer, binds them the same way.
func (a *Args) Bind(fs *flag.FlagSet) (check func() error) {
	fs.StringVar(&a.DB, "db", "", "database file")
	pattern := fs.String("pattern", "", "separate-commit or single-transaction")
	fs.StringVar(&a.Event.ID, "event-id", "", "event id")
	fs.StringVar(&a.Event.JobKey, "job-key", "", "job key")
	backend := store.BindBackend(fs, &a.Backend)
	return func() error {
		if err := backend(); err != nil {
			return err
		}
		p, err := ParsePattern(*pattern)
		if err != nil {
			return err
		}
		a.Pattern = p
		if a.DB == "" || a.Event.ID == "" || a.Event.JobKey == "" {
			return errors.New("-db, -event-id and -job-key are required")
		}
		return nil
	}
}

// ParseArgs reads the command line Argv renders.
func ParseArgs(argv []string) (Args, error) {
	var a Args
	fs := flag.NewFlagSet(WorkerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	check := a.Bind(fs)
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	return a, check()
}
