package pattern

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"idemlab/worker/protocol"
	"regexp"
	"slices"
	"strings"
	"sync"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Params are the parameters every step may use; a query's "as" adds one.
var Params = []string{"event_id", "delivery", "worker", "now_ms"}

// InvariantParams are the parameters an invariant's query may use.
var InvariantParams = []string{"event_id"}

// nameRE and paramRE are compiled on first use, not in every worker's
// start: most workers never validate a pattern.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// validate checks what the shape alone decides: step kinds, stops,
// transaction nesting, parameter names, invariant comparisons.
func (f File) validate() error {
	if strings.TrimSpace(f.Name) == "" {
		return refuse("name", "must not be empty")
	}
	for i, w := range f.Command {
		if err := protocol.CheckArg(w); err != nil {
			return refuse(fmt.Sprintf("command[%d]", i), "%v", err)
		}
	}
	if len(f.Schema) == 0 {
		return refuse("schema", "list at least one CREATE statement")
	}
	switch {
	case len(f.Handler) > 0 && len(f.Command) > 0:
		return refuse("command", "a pattern has a handler of steps or a command, not both")
	case len(f.Handler) == 0 && len(f.Command) == 0:
		return refuse("handler", "list at least one step, or name your own program with command")
	case len(f.Command) > 0 && strings.TrimSpace(f.Command[0]) == "":
		return refuse("command[0]", "must name the program to run")
	case f.HandlerTimeoutMS < 0 || f.HandlerTimeoutMS > 600_000:
		return refuse("handler_timeout_ms", "is %d, want 1 to 600000 (absent means %d)", f.HandlerTimeoutMS, DefaultHandlerTimeoutMS)
	case f.HandlerTimeoutMS > 0 && len(f.Command) == 0:
		return refuse("handler_timeout_ms", "applies to a command only")
	}
	if len(f.Invariants) == 0 {
		return refuse("invariants", "list at least one invariant; a pattern with none cannot fail")
	}
	if f.MaxDeliveries < 0 || f.MaxDeliveries > MaxMaxDeliveries {
		return refuse("max_deliveries", "is %d, want 1 to %d (absent means %d)", f.MaxDeliveries, MaxMaxDeliveries, DefaultMaxDeliveries)
	}
	if f.RedeliveryAfterMS < 0 {
		return refuse("redelivery_after_ms", "is %d, want 0 or more", f.RedeliveryAfterMS)
	}
	if err := f.validateSteps(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, iv := range f.Invariants {
		if seen[iv.Name] {
			return refuse(fmt.Sprintf("invariants[%d].name", i), "%q is also an earlier invariant's name", iv.Name)
		}
		seen[iv.Name] = true
		steps := f.sendSteps()
		if f.anySend() {
			steps = nil
		} else if steps == nil {
			steps = []string{}
		}
		if err := iv.validate(fmt.Sprintf("invariants[%d]", i), steps); err != nil {
			return err
		}
	}
	for i, b := range f.Backends {
		if !slices.Contains(store.Backends, b) || slices.Index(f.Backends, b) != i {
			return refuse(fmt.Sprintf("backends[%d]", i), "%q: want each of %s at most once", b, strings.Join(store.Backends, ", "))
		}
	}
	if len(f.SchemaPostgres) > 0 && !f.RunsOn(store.BackendPostgres) {
		return refuse("schema_postgres", "is given, but backends leaves out postgres")
	}
	for i, p := range f.Power {
		if _, _, err := ParsePower(p); err != nil {
			return refuse(fmt.Sprintf("power[%d]", i), "%v", err)
		}
	}
	for i, k := range f.KnownUnsafe {
		if err := validUnsafe(k); err != nil {
			return refuse(fmt.Sprintf("known_unsafe[%d]", i), "%v", err)
		}
	}
	return nil
}

func (f File) validateSteps() error {
	bound := append([]string{}, Params...)
	inTx := false
	acked := 0
	for i, s := range f.Handler {
		path := fmt.Sprintf("handler[%d]", i)
		if n := s.kinds(); n != 1 {
			return refuse(path, "has %d step kinds; a step is exactly one of query, exec, begin, commit, rollback, send, ack", n)
		}
		if s.As != "" && s.Query == "" {
			return refuse(path+".as", "only a query binds a name")
		}
		if s.StopIf != "" && s.Query == "" {
			return refuse(path+".stop_if", "only a query can stop the handler on its rows; on an exec use stop_unless_changed")
		}
		if s.StopIf != "" && s.StopIf != "rows" && s.StopIf != "no_rows" {
			return refuse(path+".stop_if", "is %q, want \"rows\" or \"no_rows\"", s.StopIf)
		}
		if s.StopUnlessChanged && s.Exec == "" {
			return refuse(path+".stop_unless_changed", "only an exec can stop on the rows it changed")
		}
		switch s.Kind() {
		case KindBegin:
			if s.Begin != "deferred" && s.Begin != "immediate" {
				return refuse(path+".begin", "is %q, want \"deferred\" or \"immediate\"", s.Begin)
			}
			if inTx {
				return refuse(path+".begin", "a transaction is already open (begin at an earlier step)")
			}
			inTx = true
		case KindCommit, KindRollback:
			if !inTx {
				return refuse(path+"."+s.Kind(), "no transaction is open; add a begin step before it")
			}
			inTx = false
		case KindAck:
			if acked > 0 {
				return refuse(path+".ack", "handler[%d] acks already; a delivery is acknowledged once", acked-1)
			}
			acked = i + 1
		case KindSend:
			if strings.TrimSpace(s.Send.Step) == "" {
				return refuse(path+".send.step", "must name the step sent, as \"notify\"")
			}
		}
		for _, sqlText := range s.sqlTexts() {
			if err := knownParams(path+"."+sqlField(s), sqlText, bound); err != nil {
				return err
			}
		}
		if s.As != "" {
			if !nameRE().MatchString(s.As) || slices.Contains(bound, s.As) {
				return refuse(path+".as", "%q: want a new lower-case name, not one of %s", s.As, strings.Join(bound, ", "))
			}
			bound = append(bound, s.As)
		}
	}
	if inTx {
		return refuse("handler", "ends inside a transaction; add a commit or rollback step")
	}
	return nil
}

// sendSteps of a program are unknown until it runs, so a sends invariant
// may name any step.
func (f File) anySend() bool { return f.IsProgram() }

func (s Step) kinds() int {
	n := 0
	for _, set := range []bool{s.Query != "", s.Exec != "", s.Begin != "", s.Commit, s.Rollback, s.Send != nil, s.Ack} {
		if set {
			n++
		}
	}
	return n
}

// sqlTexts are the SQL texts a step runs, including a send's key.
func (s Step) sqlTexts() []string {
	switch {
	case s.Query != "":
		return []string{s.Query}
	case s.Exec != "":
		return []string{s.Exec}
	case s.Send != nil && s.Send.Key != "":
		return []string{keySQL(s.Send.Key)}
	}
	return nil
}

func sqlField(s Step) string {
	if s.Send != nil {
		return "send.key"
	}
	return s.Kind()
}

// keySQL is the statement that evaluates a send's key expression.
func keySQL(expr string) string { return "SELECT " + expr }

var paramRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`) })

// ParamNames lists the :name parameters of an SQL text outside quoted
// strings, in order of first use.
func ParamNames(sqlText string) []string {
	var out []string
	for _, part := range unquoted(sqlText) {
		for _, m := range paramRE().FindAllStringSubmatch(part, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// unquoted splits SQL into the pieces outside '…' and "…" quotes.
func unquoted(s string) []string {
	var out []string
	var b strings.Builder
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteRune(r)
		}
	}
	return append(out, b.String())
}

func knownParams(path, sqlText string, bound []string) error {
	for _, p := range ParamNames(sqlText) {
		if !slices.Contains(bound, p) {
			return refuse(path, "parameter :%s does not exist here (known: :%s)", p, strings.Join(bound, ", :"))
		}
	}
	return nil
}

func (iv Invariant) validate(path string, sendSteps []string) error {
	if strings.TrimSpace(iv.Name) == "" {
		return refuse(path+".name", "must not be empty; it names the invariant in tables")
	}
	switch {
	case iv.Query != "" && iv.Sends != nil:
		return refuse(path, "has both query and sends; an invariant is one of them")
	case iv.Query != "":
		if err := knownParams(path+".query", iv.Query, InvariantParams); err != nil {
			return err
		}
		return bound(path, iv.Equals, iv.AtMost)
	case iv.Sends != nil:
		if iv.Equals != nil || iv.AtMost != nil {
			return refuse(path, "a sends invariant takes equals or at_most inside sends")
		}
		if sendSteps != nil && !slices.Contains(sendSteps, iv.Sends.Step) {
			return refuse(path+".sends.step", "%q is not a step any send of the handler names (sent: %s)", iv.Sends.Step, strings.Join(sendSteps, ", "))
		}
		return bound(path+".sends", iv.Sends.Equals, iv.Sends.AtMost)
	}
	return refuse(path, "needs a query or sends")
}

func bound(path string, equals, atMost *int64) error {
	if (equals == nil) == (atMost == nil) {
		return refuse(path, "needs exactly one of equals and at_most")
	}
	return nil
}

func (f File) sendSteps() []string {
	var out []string
	for _, s := range f.Handler {
		if s.Send != nil && !slices.Contains(out, s.Send.Step) {
			out = append(out, s.Send.Step)
		}
	}
	return out
}

// ParsePower reads a power setting such as "WAL/NORMAL".
func ParsePower(s string) (journalMode, synchronous string, err error) {
	j, sy, ok := strings.Cut(strings.ToUpper(strings.TrimSpace(s)), "/")
	if !ok || !slices.Contains(sqlitedb.JournalModes, j) || !slices.Contains(sqlitedb.SyncLevels, sy) {
		return "", "", fmt.Errorf("%q: want JOURNAL_MODE/SYNCHRONOUS with a journal mode of %s and a level of %s", s, strings.Join(sqlitedb.JournalModes, ", "), strings.Join(sqlitedb.SyncLevels, ", "))
	}
	return j, sy, nil
}

// Fault classes a pattern is put through.
const (
	FaultPoints     = "points"
	FaultRandom     = "random"
	FaultConcurrent = "concurrent"
	FaultPower      = "power"
)

// Faults lists the classes in the order they run.
var Faults = []string{FaultPoints, FaultRandom, FaultConcurrent, FaultPower}

// Unsafe is one known_unsafe entry read apart. Its form is
// CLASS[:SETTING][@BACKEND[/ISOLATION]]: "points" expects a violation of
// the points class on every backend, "power:DELETE/FULL" one power
// setting, "concurrent@postgres" the races on PostgreSQL only, and
// "concurrent@postgres/read-committed" those under one isolation level.
type Unsafe struct {
	Class string
	// Power narrows the power class to one JOURNAL_MODE/SYNCHRONOUS.
	Power string
	// Backend, when set, is the one backend the entry applies to, and
	// Isolation the one level on PostgreSQL.
	Backend   string
	Isolation store.Isolation
}

// ParseUnsafe reads one known_unsafe entry.
func ParseUnsafe(k string) (Unsafe, error) {
	var u Unsafe
	rest, on, hasOn := strings.Cut(k, "@")
	class, narrow, hasNarrow := strings.Cut(rest, ":")
	if !slices.Contains(Faults, class) {
		return u, fmt.Errorf("%q: want a fault class (%s), optionally narrowed as \"power:DELETE/FULL\" or qualified as \"concurrent@postgres/serializable\"", k, strings.Join(Faults, ", "))
	}
	u.Class = class
	if hasNarrow {
		if class != FaultPower {
			return u, fmt.Errorf("%q: only power is narrowed by a setting", k)
		}
		j, sy, err := ParsePower(narrow)
		if err != nil {
			return u, err
		}
		u.Power = j + "/" + sy
	}
	if !hasOn {
		return u, nil
	}
	b, iso, hasIso := strings.Cut(on, "/")
	if !slices.Contains(store.Backends, b) {
		return u, fmt.Errorf("%q: backend %q, want one of %s", k, b, strings.Join(store.Backends, ", "))
	}
	u.Backend = b
	if class == FaultPower && b != store.BackendSQLite {
		return u, fmt.Errorf("%q: the power class cuts power under SQLite's VFS and runs on sqlite only", k)
	}
	if hasIso {
		l, err := store.ParseIsolation(iso)
		if b != store.BackendPostgres || err != nil {
			return u, fmt.Errorf("%q: an isolation level qualifies postgres only, one of %s", k, store.IsolationNames())
		}
		u.Isolation = l
	}
	return u, nil
}

// Target is where a condition runs: the backend, and on PostgreSQL the
// isolation level.
type Target struct {
	Backend   string
	Isolation store.Isolation
}

// Covers says whether the entry expects a violation in a condition of
// class fault (power setting power) run on t.
func (u Unsafe) Covers(fault, power string, t Target) bool {
	b := t.Backend
	if b == "" {
		b = store.BackendSQLite
	}
	switch {
	case u.Class != fault, u.Power != "" && u.Power != power:
		return false
	case u.Backend != "" && u.Backend != b, u.Isolation != 0 && u.Isolation != t.Isolation:
		return false
	}
	return true
}

func validUnsafe(k string) error {
	_, err := ParseUnsafe(k)
	return err
}

// Check decodes a pattern file and prepares every statement against its
// schema on a scratch in-memory SQLite database, so SQL that cannot run is
// refused before any trial, naming the step.
func Check(ctx context.Context, b []byte) (File, error) {
	f, err := Decode(b)
	if err != nil {
		return f, err
	}
	db, err := sql.Open("sqlite3", "file::memory:?mode=memory")
	if err != nil {
		return f, fmt.Errorf("open a scratch database: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return f, CheckOn(ctx, store.SQLiteDB(db), f)
}

// CheckOn runs the file's schema for st's backend on st, an empty
// database of one connection, and prepares every statement of the handler
// and the invariants there, each with its :name parameters bound as the
// worker binds them. A refusal names the field and carries the database's
// own message.
func CheckOn(ctx context.Context, st store.Store, f File) error {
	field := "schema"
	if st.Dialect.Name() == store.BackendPostgres && len(f.SchemaPostgres) > 0 {
		field = "schema_postgres"
	}
	for i, stmt := range f.SchemaOn(st.Dialect.Name()) {
		if _, err := st.DB.ExecContext(ctx, stmt); err != nil {
			return refuseStmt(ctx, fmt.Sprintf("%s[%d]", field, i), "does not run on an empty database", err)
		}
	}
	for i, s := range f.Handler {
		for _, q := range s.sqlTexts() {
			if err := prepare(ctx, st, q); err != nil {
				return refuseStmt(ctx, fmt.Sprintf("handler[%d].%s", i, sqlField(s)), "does not prepare against the schema", err)
			}
		}
	}
	for i, iv := range f.Invariants {
		if iv.Query != "" {
			if err := prepare(ctx, st, iv.Query); err != nil {
				return refuseStmt(ctx, fmt.Sprintf("invariants[%d].query", i), "does not prepare against the schema", err)
			}
			if err := checkColumns(ctx, st, fmt.Sprintf("invariants[%d].query", i), iv); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkColumns refuses an invariant whose query the server describes as
// returning anything but one integer column: PostgreSQL's columns have
// types at plan time, SQLite's only per value, so there a value of
// another type is a finding on the trial instead.
func checkColumns(ctx context.Context, st store.Store, path string, iv Invariant) error {
	if st.Dialect.Name() != store.BackendPostgres {
		return nil
	}
	q, _ := st.Dialect.BindNamed(iv.Query, []sql.NamedArg{sql.Named("event_id", nil)})
	types, err := store.DescribeColumns(ctx, st.DB, q)
	switch {
	case err != nil:
		return refuseStmt(ctx, path, fmt.Sprintf("invariant '%s': the server cannot describe its columns", iv.Name), err)
	case len(types) != 1:
		return refuse(path, "invariant '%s' returns %d columns; an invariant returns one integer", iv.Name, len(types))
	case !slices.Contains(IntegerTypes, types[0]):
		return refuse(path, "invariant '%s' returns a column of type %s; an invariant returns one integer (int2, int4, int8, or a numeric such as sum() whose value is whole)", iv.Name, types[0])
	}
	return nil
}

// refuseStmt refuses the file at path for statement error err, saying why;
// but when ctx ended first the file is not to blame: the error then wraps
// the context's cause, and err, so the edge classes the signal (130).
func refuseStmt(ctx context.Context, path, why string, err error) error {
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, cause) {
		return fmt.Errorf("%s: check stopped: %w", path, err)
	} else if cause != nil {
		return fmt.Errorf("%s: check stopped by %w: %w", path, cause, err)
	}
	return refuse(path, "%s: %v", why, err)
}

// prepare prepares q as the worker would send it: its :name parameters
// rewritten into the dialect's own.
func prepare(ctx context.Context, st store.Store, q string) error {
	var named []sql.NamedArg
	for _, n := range ParamNames(q) {
		named = append(named, sql.Named(n, nil))
	}
	q, _ = st.Dialect.BindNamed(q, named)
	p, err := st.DB.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	return p.Close()
}
