package store

import (
	"context"
	"fmt"
	"os"

	"idemlab/worker/sqlitedb"
)

// The backends, by their command-line names.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// Backends lists them, the default first.
var Backends = []string{BackendSQLite, BackendPostgres}

// ParseBackend checks a backend name; empty means SQLite, so a command
// line recorded before there was a choice reads as it ran.
func ParseBackend(s string) (string, error) {
	switch s {
	case "", BackendSQLite:
		return BackendSQLite, nil
	case BackendPostgres:
		return s, nil
	}
	return "", fmt.Errorf("unknown backend %q (known: %q)", s, Backends)
}

// ReadBack is what a connection read back when it was opened: SQLite's
// pragmas or PostgreSQL's settings, whichever backend it opened.
type ReadBack struct {
	SQLite   *sqlitedb.Settings
	Postgres *PGSettings
}

// Open opens a worker's database: for SQLite the file target with the
// worker's options o (its path is target), for PostgreSQL the connection
// string target with at most o.MaxConns connections. Either way the
// settings are read back.
func Open(ctx context.Context, backend, target string, o sqlitedb.Options) (Store, ReadBack, error) {
	if backend == BackendPostgres {
		st, s, err := OpenPostgres(ctx, target, o.MaxConns)
		return st, ReadBack{Postgres: &s}, err
	}
	o.Path = target
	db, s, err := sqlitedb.Open(ctx, o)
	if err != nil {
		return Store{}, ReadBack{}, err
	}
	return SQLiteDB(db), ReadBack{SQLite: &s}, nil
}

// Missing says that target names no database a worker could open without
// creating one: a SQLite path that is not a regular file. A PostgreSQL
// connection string is never missing here; the server says so on open.
func Missing(backend, target string) bool {
	if backend == BackendPostgres {
		return false
	}
	st, err := os.Stat(target)
	return err != nil || !st.Mode().IsRegular()
}
