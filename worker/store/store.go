// Package store is the handle a worker's table readers take: a database
// handle and the dialect that speaks to it. A reader written against a
// Store asks the dialect for what differs between databases (placeholders
// today), so a second backend slots in under the same readers.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	// TableQuery counts the tables named by its one ? placeholder, so a
	// reader can tell a table a killed worker never created from an
	// empty one.
	TableQuery() string
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

// HasTable reports whether the database holds the table name.
func (s Store) HasTable(ctx context.Context, name string) (bool, error) {
	var n int
	if err := s.DB.QueryRowContext(ctx, s.Dialect.Rebind(s.Dialect.TableQuery()), name).Scan(&n); err != nil {
		return false, fmt.Errorf("look up table %s: %w", name, err)
	}
	return n > 0, nil
}

// ReadTable runs query, a read of table written with ? placeholders, and
// hands each row's Scan to row. ok is false, and nothing is read, when the
// database holds no such table: a worker killed before it created the
// table leaves that, and a reader tells it from an empty table.
func (s Store) ReadTable(ctx context.Context, table, query string, row func(scan func(dest ...any) error) error, args ...any) (ok bool, err error) {
	if ok, err := s.HasTable(ctx, table); err != nil || !ok {
		return false, err
	}
	rs, err := s.QueryContext(ctx, query, args...)
	if err != nil {
		return true, fmt.Errorf("read %s: %w", table, err)
	}
	for rs.Next() {
		if err := row(rs.Scan); err != nil {
			rs.Close()
			return true, fmt.Errorf("read %s: %w", table, err)
		}
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return true, fmt.Errorf("read %s: %w", table, err)
	}
	return true, nil
}

// Close closes the database handle.
func (s Store) Close() error { return s.DB.Close() }

// SQLite is SQLite's dialect: ? placeholders as written.
type SQLite struct{}

func (SQLite) Name() string               { return "sqlite" }
func (SQLite) Rebind(query string) string { return query }
func (SQLite) TableQuery() string {
	return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
}

// Numbered is a dialect with $1, $2, ... placeholders, as PostgreSQL's.
type Numbered struct{ Backend string }

func (n Numbered) Name() string { return n.Backend }

// TableQuery asks the standard information schema.
func (Numbered) TableQuery() string {
	return "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
}

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

// SQLiteDB is an open SQLite handle as a Store, for a caller that holds
// its connection for other work too.
func SQLiteDB(db *sql.DB) Store { return Store{DB: db, Dialect: SQLite{}} }

// OpenSQLite opens a SQLite file as the next process would, which also
// rolls back a hot journal left by a crash, with the settings read back
// and checked.
func OpenSQLite(ctx context.Context, o sqlitedb.Options) (Store, error) {
	db, _, err := sqlitedb.Open(ctx, o)
	if err != nil {
		return Store{}, err
	}
	return SQLiteDB(db), nil
}
