package store

import (
	"flag"
	"fmt"
)

// BackendArgv appends a worker's -backend flag to argv, unless backend is
// empty: SQLite's, the default, for which a command line stays as it was
// before there was a choice.
func BackendArgv(argv []string, backend string) []string {
	if backend == "" {
		return argv
	}
	return append(argv, "-backend", backend)
}

// BindBackend declares a worker's -backend flag on fs. check, run after
// fs.Parse, refuses a backend it does not know and keeps SQLite's as "",
// as BackendArgv leaves it out.
func BindBackend(fs *flag.FlagSet, into *string) (check func() error) {
	fs.StringVar(into, "backend", "", "sqlite (default) or postgres")
	return func() error {
		b, err := ParseBackend(*into)
		if err != nil {
			return fmt.Errorf("-backend: %w", err)
		}
		if b == BackendSQLite {
			*into = ""
		}
		return nil
	}
}
