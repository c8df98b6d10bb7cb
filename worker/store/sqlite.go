package store

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// SQLite is SQLite's dialect: ? and :name placeholders as written.
type SQLite struct{}

func (SQLite) Name() string               { return BackendSQLite }
func (SQLite) Rebind(query string) string { return query }

// BindNamed passes the named arguments on: the driver binds :name itself.
func (SQLite) BindNamed(query string, args []sql.NamedArg) (string, []any) {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return query, out
}

func (SQLite) TableQuery() string {
	return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
}

func (SQLite) ColumnsQuery() string { return "SELECT name FROM pragma_table_info(?)" }

// InsertIgnore is the article's INSERT OR IGNORE.
func (SQLite) InsertIgnore(into string) string { return "INSERT OR IGNORE " + into }

// RowOrder is SQLite's implicit rowid, which grows with each insert.
func (SQLite) RowOrder() string { return "rowid" }

// KeyedTable is WITHOUT ROWID: the primary key is the table's only b-tree.
func (SQLite) KeyedTable() string { return " WITHOUT ROWID" }

// FloatType is REAL, SQLite's 8-byte float.
func (SQLite) FloatType() string { return "REAL" }

// Classify reads SQLite's result code, and the message for a missing
// column, which SQLite reports as a plain SQLITE_ERROR.
func (SQLite) Classify(err error) Class {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return ClassOther
	}
	switch se.Code {
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return ClassBusy
	case sqlite3.ErrConstraint:
		if se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey {
			return ClassUnique
		}
	case sqlite3.ErrError:
		msg := se.Error()
		if strings.Contains(msg, "no such column") || strings.Contains(msg, "has no column named") {
			return ClassUndefinedColumn
		}
	}
	return ClassOther
}
