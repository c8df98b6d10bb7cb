// Package store is the handle a worker's table readers take: a database
// handle and the dialect that speaks to it. A reader written against a
// Store asks the dialect for what differs between databases (placeholders
// today), so a second backend slots in under the same readers.
package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"idemlab/worker/sqlitedb"
)

// Dialect holds what differs between the databases idemlab speaks to.
type Dialect interface {
	// Name is the backend's name, as on the command line.
	Name() string
	// Rebind rewrites a query written with ? placeholders into the
	// dialect's own.
	Rebind(query string) string
}

// Store is an open database and its dialect.
type Store struct {
	DB      *sql.DB
	Dialect Dialect
}

// QueryContext runs a query written with ? placeholders.
func (s Store) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.DB.QueryContext(ctx, s.Dialect.Rebind(query), args...)
}

// Close closes the database handle.
func (s Store) Close() error { return s.DB.Close() }

// SQLite is SQLite's dialect: ? placeholders as written.
type SQLite struct{}

func (SQLite) Name() string               { return "sqlite" }
func (SQLite) Rebind(query string) string { return query }

// Numbered is a dialect with $1, $2, ... placeholders, as PostgreSQL's.
type Numbered struct{ Backend string }

func (n Numbered) Name() string { return n.Backend }

// Rebind numbers each ? outside a quoted string.
func (Numbered) Rebind(query string) string {
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range query {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// OpenSQLite opens a SQLite file as the next process would, which also
// rolls back a hot journal left by a crash, with the settings read back
// and checked.
func OpenSQLite(ctx context.Context, o sqlitedb.Options) (Store, error) {
	db, _, err := sqlitedb.Open(ctx, o)
	if err != nil {
		return Store{}, err
	}
	return Store{DB: db, Dialect: SQLite{}}, nil
}
