package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres is PostgreSQL's dialect: $n placeholders, ON CONFLICT DO
// NOTHING, the information schema, and SQLSTATE codes.
type Postgres struct{}

func (Postgres) Name() string { return BackendPostgres }

// Rebind numbers each ? outside a quoted string.
func (Postgres) Rebind(query string) string {
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

// BindNamed turns each :name outside a quoted string into $n, numbering
// names in order of first use; a name used twice binds one argument. A
// name with no argument is left as written, so the server names it in
// its error.
func (Postgres) BindNamed(query string, args []sql.NamedArg) (string, []any) {
	byName := map[string]any{}
	for _, a := range args {
		byName[a.Name] = a.Value
	}
	num := map[string]int{}
	var out []any
	var b strings.Builder
	rs := []rune(query)
	quoted := false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '\'' {
			quoted = !quoted
		}
		if r != ':' || quoted || i+1 >= len(rs) || !isNameRune(rs[i+1], true) || (i > 0 && rs[i-1] == ':') {
			b.WriteRune(r)
			continue
		}
		j := i + 1
		for j < len(rs) && isNameRune(rs[j], false) {
			j++
		}
		name := string(rs[i+1 : j])
		v, ok := byName[name]
		if !ok {
			b.WriteString(string(rs[i:j]))
			i = j - 1
			continue
		}
		if num[name] == 0 {
			out = append(out, v)
			num[name] = len(out)
		}
		b.WriteString("$" + strconv.Itoa(num[name]))
		i = j - 1
	}
	return b.String(), out
}

func isNameRune(r rune, first bool) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (!first && r >= '0' && r <= '9')
}

// TableQuery asks the information schema, in the session's own schema:
// each condition's tables live in a schema of their own.
func (Postgres) TableQuery() string {
	return "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
}

func (Postgres) ColumnsQuery() string {
	return "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position"
}

// InsertIgnore is INSERT … ON CONFLICT DO NOTHING.
func (Postgres) InsertIgnore(into string) string { return "INSERT " + into + " ON CONFLICT DO NOTHING" }

// RowOrder is the row's physical place. A table that is only inserted
// into, never updated or deleted from, fills its pages in insertion order.
func (Postgres) RowOrder() string { return "ctid" }

// SQLSTATE codes the workers tell apart.
const (
	CodeSerialization   = "40001"
	CodeDeadlock        = "40P01"
	CodeUnique          = "23505"
	CodeUndefinedColumn = "42703"
)

// Classify reads the SQLSTATE of a server error.
func (Postgres) Classify(err error) Class {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ClassOther
	}
	switch pe.Code {
	case CodeSerialization:
		return ClassSerialization
	case CodeDeadlock:
		return ClassDeadlock
	case CodeUnique:
		return ClassUnique
	case CodeUndefinedColumn:
		return ClassUndefinedColumn
	}
	return ClassOther
}

// PGRequested is what a run asks of every PostgreSQL session: the
// isolation of its transactions and how a commit waits for the WAL. The
// parent puts them in the connection string, so every connection of every
// worker starts with them; each reads them back.
type PGRequested struct {
	// Isolation is PostgreSQL's name of the level, as "read committed".
	Isolation string `json:"default_transaction_isolation"`
	// SynchronousCommit is on, local or off.
	SynchronousCommit string `json:"synchronous_commit"`
}

// Isolation levels by their command-line names, and synchronous_commit's
// values.
var (
	IsolationLevels = map[string]string{
		"read-committed":  "read committed",
		"repeatable-read": "repeatable read",
		"serializable":    "serializable",
	}
	IsolationOrder    = []string{"read-committed", "repeatable-read", "serializable"}
	SynchronousCommit = []string{"on", "local", "off"}
)

// PGSettings are what a PostgreSQL session reads back: the server's
// version and the settings a result rests on.
type PGSettings struct {
	ServerVersion               string `json:"server_version"`
	DefaultTransactionIsolation string `json:"default_transaction_isolation"`
	SynchronousCommit           string `json:"synchronous_commit"`
	Fsync                       string `json:"fsync"`
	WalLevel                    string `json:"wal_level"`
}

// Requested is the part of the read-back a run asked for.
func (s PGSettings) Requested() PGRequested {
	return PGRequested{Isolation: s.DefaultTransactionIsolation, SynchronousCommit: s.SynchronousCommit}
}

// ReadPGSettings reads the settings with SHOW, on one connection of db.
func ReadPGSettings(ctx context.Context, db *sql.DB) (PGSettings, error) {
	var s PGSettings
	for _, v := range []struct {
		name string
		into *string
	}{
		{"server_version", &s.ServerVersion}, {"default_transaction_isolation", &s.DefaultTransactionIsolation},
		{"synchronous_commit", &s.SynchronousCommit}, {"fsync", &s.Fsync}, {"wal_level", &s.WalLevel},
	} {
		if err := db.QueryRowContext(ctx, "SHOW "+v.name).Scan(v.into); err != nil {
			return s, fmt.Errorf("read %s: %w", v.name, err)
		}
	}
	return s, nil
}

// SessionDSN is the connection string a worker opens: base, which names
// the server and the database, with the schema the condition's tables live
// in and the requested settings as startup parameters. base is a
// key=value string or a postgres:// URL; what SessionDSN adds overrides
// what base says.
func SessionDSN(base, schema string, req PGRequested) string {
	params := [][2]string{
		{"search_path", schema},
		{"default_transaction_isolation", req.Isolation},
		{"synchronous_commit", req.SynchronousCommit},
	}
	if u, err := url.Parse(base); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		for _, p := range params {
			if p[1] != "" {
				q.Set(p[0], p[1])
			}
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	parts := []string{strings.TrimSpace(base)}
	for _, p := range params {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+quoteValue(p[1]))
		}
	}
	return strings.Join(parts, " ")
}

// quoteValue quotes a key=value value as libpq reads it.
func quoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// OpenPostgres opens dsn through pgx's database/sql driver, with at most
// maxConns connections (0 means 1), and reads the settings back.
func OpenPostgres(ctx context.Context, dsn string, maxConns int) (Store, PGSettings, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return Store{}, PGSettings{}, fmt.Errorf("open PostgreSQL: %w", err)
	}
	if maxConns <= 0 {
		maxConns = 1
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	s, err := ReadPGSettings(ctx, db)
	if err != nil {
		db.Close()
		return Store{}, s, fmt.Errorf("open PostgreSQL: %w", err)
	}
	return Store{DB: db, Dialect: Postgres{}}, s, nil
}

// The pgx driver registers itself as "pgx" when its package loads; the
// blank use keeps the import when nothing else names it.
var _ = stdlib.GetDefaultDriver
