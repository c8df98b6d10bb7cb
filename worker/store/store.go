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

	"idemlab/worker/sqlitedb"
)

// Dialect holds what differs between the databases idemlab speaks to. It
// is the one place that knows: a worker or a reader asks its store's
// dialect, never which backend it runs on.
type Dialect interface {
	// Name is the backend's name, as on the command line.
	Name() string
	// Rebind rewrites a query written with ? placeholders into the
	// dialect's own.
	Rebind(query string) string
	// BindNamed rewrites a query written with :name parameters into one
	// the driver takes, with the arguments in the order it wants them.
	BindNamed(query string, args []sql.NamedArg) (string, []any)
	// TableQuery counts the tables named by its one ? placeholder, so a
	// reader can tell a table a killed worker never created from an
	// empty one.
	TableQuery() string
	// ColumnsQuery lists the column names of the table named by its one ?
	// placeholder, one row each.
	ColumnsQuery() string
	// InsertIgnore turns "INTO t (cols) VALUES (...)" into an insert that
	// does nothing where it would break a unique constraint.
	InsertIgnore(into string) string
	// RowOrder is the column that orders a table without a key by
	// insertion, for tables that are only ever inserted into.
	RowOrder() string
	// Classify says what kind of failure err is.
	Classify(err error) Class
	// KeyedTable ends a CREATE TABLE whose rows are stored by their
	// primary key alone, where the database can: SQLite's WITHOUT ROWID.
	KeyedTable() string
	// FloatType is the column type of a 64-bit float.
	FloatType() string
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

// ExecContext runs a statement written with ? placeholders.
func (s Store) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.DB.ExecContext(ctx, s.Dialect.Rebind(query), args...)
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
