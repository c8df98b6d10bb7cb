package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
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

// BindNamed turns each :name outside a quoted string, a quoted name and
// a comment into $n, numbering names in order of first use; a name used
// twice binds one argument. A name with no argument is left as written,
// so the server names it in its error.
func (Postgres) BindNamed(query string, args []sql.NamedArg) (string, []any) {
	byName := map[string]any{}
	for _, a := range args {
		byName[a.Name] = a.Value
	}
	num := map[string]int{}
	var out []any
	var b strings.Builder
	rs := []rune(query)
	for i := 0; i < len(rs); i++ {
		if n := unbound(rs[i:]); n > 0 {
			b.WriteString(string(rs[i : i+n]))
			i += n - 1
			continue
		}
		r := rs[i]
		if r != ':' || i+1 >= len(rs) || !isNameRune(rs[i+1], true) || (i > 0 && rs[i-1] == ':') {
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

// unbound is the length of the string literal, quoted name or comment at
// the start of rs, in which a colon binds nothing; 0 when none starts
// there. One left open runs to the end.
func unbound(rs []rune) int {
	end := func(close string, from int) int {
		s := string(rs[from:])
		if k := strings.Index(s, close); k >= 0 {
			return from + len([]rune(s[:k+len(close)]))
		}
		return len(rs)
	}
	switch {
	case rs[0] == '\'' || rs[0] == '"':
		// A doubled quote inside is two literals back to back, which
		// the loop reads the same way.
		return end(string(rs[0]), 1)
	case len(rs) > 1 && rs[0] == '-' && rs[1] == '-':
		return end("\n", 2)
	case len(rs) > 1 && rs[0] == '/' && rs[1] == '*':
		return end("*/", 2)
	}
	return 0
}

func isNameRune(r rune, first bool) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (!first && r >= '0' && r <= '9')
}

// TableQuery asks the catalog, in the session's own schema: each
// condition's tables live in a schema of their own. pg_class is asked by
// its (relname, relnamespace) index: the information schema's views, and
// pg_tables, which compares every schema's name with current_schema() for
// each table of that name, cost milliseconds a lookup once a run has made
// hundreds of schemas, and the parent looks a table up after every race.
func (Postgres) TableQuery() string {
	return "SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = current_schema()::regnamespace AND relname = ? AND relkind IN ('r', 'p')"
}

// ColumnsQuery lists the live columns of the table in the session's
// schema, in order.
func (Postgres) ColumnsQuery() string {
	return "SELECT a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid " +
		"WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ? AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
}

// InsertIgnore is INSERT … ON CONFLICT DO NOTHING.
func (Postgres) InsertIgnore(into string) string { return "INSERT " + into + " ON CONFLICT DO NOTHING" }

// RowOrder is the row's physical place. A table that is only inserted
// into, never updated or deleted from, fills its pages in insertion order.
func (Postgres) RowOrder() string { return "ctid" }

// KeyedTable is nothing: a PostgreSQL table is a heap beside its key's
// index.
func (Postgres) KeyedTable() string { return "" }

// FloatType is DOUBLE PRECISION; PostgreSQL's REAL holds 4 bytes.
func (Postgres) FloatType() string { return "DOUBLE PRECISION" }

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
// isolation of its transactions and how a commit waits for the WAL, as a
// run's settings record it (Session.Requested). The parent puts them in
// the connection string, so every connection of every worker starts with
// them; each reads them back.
type PGRequested struct {
	// Isolation is the level in PostgreSQL's words, as "read committed":
	// Isolation.SQL writes it, Level reads it.
	Isolation string `json:"default_transaction_isolation"`
	// SynchronousCommit is on, local or off.
	SynchronousCommit string `json:"synchronous_commit"`
}

// SynchronousCommit are synchronous_commit's values.
var SynchronousCommit = []string{"on", "local", "off"}

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

// ReadPGSettings reads the settings in one round trip, with
// current_setting, which reads what SHOW shows, on one connection of db.
func ReadPGSettings(ctx context.Context, db *sql.DB) (PGSettings, error) {
	var s PGSettings
	err := db.QueryRowContext(ctx, "SELECT "+settingsColumns).
		Scan(&s.ServerVersion, &s.DefaultTransactionIsolation, &s.SynchronousCommit, &s.Fsync, &s.WalLevel)
	if err != nil {
		return s, fmt.Errorf("read the session's settings: %w", err)
	}
	return s, nil
}

// SessionKey says which session a PostgreSQL connection string opens,
// less its schema: two strings with one key differ in search_path alone,
// so one open session serves both, with SET search_path between them. ok
// is false for a string pgx cannot parse.
func SessionKey(dsn string) (key, schema string, ok bool) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", "", false
	}
	schema = cfg.RuntimeParams["search_path"]
	params := make([]string, 0, len(cfg.RuntimeParams))
	for k, v := range cfg.RuntimeParams {
		if k != "search_path" {
			params = append(params, k+"="+v)
		}
	}
	sort.Strings(params)
	key = fmt.Sprintf("%s|%d|%s|%s|%s", cfg.Host, cfg.Port, cfg.Database, cfg.User, strings.Join(params, "|"))
	return key, schema, true
}

// UseSchema points every later statement of st's one session at schema,
// as a connection string's search_path does, and reads the settings back
// in the same round trip.
func UseSchema(ctx context.Context, st Store, schema string) (PGSettings, error) {
	var s PGSettings
	var path string
	err := st.DB.QueryRowContext(ctx, "SELECT set_config('search_path', $1, false), "+settingsColumns, schema).
		Scan(&path, &s.ServerVersion, &s.DefaultTransactionIsolation, &s.SynchronousCommit, &s.Fsync, &s.WalLevel)
	if err != nil {
		return s, fmt.Errorf("set search_path: %w", err)
	}
	return s, nil
}

// settingsColumns read what SHOW shows, as PGSettings' fields in order.
const settingsColumns = `current_setting('server_version'), current_setting('default_transaction_isolation'),
  current_setting('synchronous_commit'), current_setting('fsync'), current_setting('wal_level')`

// OpenPostgres opens dsn through pgx's database/sql driver, with at most
// maxConns connections (0 means 1), and reads the settings back. Every
// statement is parsed and planned afresh (pgx's exec mode, one round trip
// still): a session that Sessions moves to another schema must not run a
// plan cached against the last one, whose table may have other columns.
func OpenPostgres(ctx context.Context, dsn string, maxConns int) (Store, PGSettings, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return Store{}, PGSettings{}, fmt.Errorf("open PostgreSQL: %w", err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	db := stdlib.OpenDB(*cfg)
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

// DescribeColumns asks the server, without running q, for the types of
// the columns q returns, by name in lower case (int8, numeric, text,
// bool, …): pgx parses and describes the statement on one of db's
// connections, so it sees that connection's search_path.
func DescribeColumns(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []string
	err = conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("describe a statement: %T is not a pgx connection", driverConn)
		}
		sd, err := c.Conn().Prepare(ctx, "", q)
		if err != nil {
			return err
		}
		for _, fd := range sd.Fields {
			name := strconv.FormatUint(uint64(fd.DataTypeOID), 10)
			if t, ok := c.Conn().TypeMap().TypeForOID(fd.DataTypeOID); ok {
				name = t.Name
			}
			out = append(out, strings.ToLower(name))
		}
		return nil
	})
	return out, err
}
