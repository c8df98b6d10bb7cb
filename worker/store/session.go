package store

import (
	"fmt"
	"net/url"
	"strings"
)

// Isolation is a PostgreSQL transaction isolation level. Its one name is
// the command line's (read-committed); SQL gives PostgreSQL's own words
// (read committed), which the server and the recorded settings use. The
// zero value is no level: the server's default.
type Isolation uint8

// The levels, weakest first.
const (
	ReadCommitted Isolation = iota + 1
	RepeatableRead
	Serializable
)

// Isolations are the levels in order, weakest first.
var Isolations = []Isolation{ReadCommitted, RepeatableRead, Serializable}

// isolationWords are each level's name and SQL text, by its value.
var isolationWords = [...][2]string{
	{"", ""},
	ReadCommitted:  {"read-committed", "read committed"},
	RepeatableRead: {"repeatable-read", "repeatable read"},
	Serializable:   {"serializable", "serializable"},
}

// String is the level's name, as --isolation takes it; "" for none.
func (i Isolation) String() string {
	if int(i) >= len(isolationWords) {
		return fmt.Sprintf("isolation(%d)", uint8(i))
	}
	return isolationWords[i][0]
}

// SQL is the level as PostgreSQL spells it; "" for none.
func (i Isolation) SQL() string {
	if int(i) >= len(isolationWords) {
		return ""
	}
	return isolationWords[i][1]
}

// IsolationNames lists the levels' names for an error message.
func IsolationNames() string {
	names := make([]string, len(Isolations))
	for i, l := range Isolations {
		names[i] = l.String()
	}
	return strings.Join(names, ", ")
}

// ParseIsolation reads a level by its name, as a flag or an input file
// gives it.
func ParseIsolation(name string) (Isolation, error) {
	for _, l := range Isolations {
		if l.String() == name {
			return l, nil
		}
	}
	return 0, fmt.Errorf("isolation %q: want one of %s", name, IsolationNames())
}

// RecordedIsolation reads a level as a results folder or the server
// spells it: by its name, or in PostgreSQL's words, which the settings of
// every run so far record ("read committed"). It is the one reader of that
// second spelling; "" is no level.
func RecordedIsolation(s string) (Isolation, bool) {
	if s == "" {
		return 0, true
	}
	for _, l := range Isolations {
		if s == l.String() || s == l.SQL() {
			return l, true
		}
	}
	return 0, false
}

// Level is the requested level, read as the record spells it.
func (r PGRequested) Level() (Isolation, bool) { return RecordedIsolation(r.Isolation) }

// Matches says whether a session that read back got runs as r asks: the
// same level, as values, and the same synchronous_commit.
func (r PGRequested) Matches(got PGRequested) bool {
	want, okW := r.Level()
	have, okH := got.Level()
	return okW && okH && want == have && r.SynchronousCommit == got.SynchronousCommit
}

// Session is what a run asks of one PostgreSQL session, as values: the
// server and database it opens (Base), the schema its tables live in, and
// the settings every transaction starts with. Each consumer derives its
// own form from these: the connection string a Go worker opens (DSN), the
// one a program's libpq reads (ProgramDSN), the statements that give a
// session already open the same settings (Set), and what every session
// must read back (Requested).
type Session struct {
	// Base names the server and the database: a libpq key=value string or
	// a postgres:// URL. What the session adds overrides what Base says.
	Base string
	// Schema is the session's search_path: a schema name in lower case,
	// as the run makes them.
	Schema            string
	Isolation         Isolation
	SynchronousCommit string
}

// Startup parameters a Session sets, in the order every form lists them.
const (
	paramSearchPath        = "search_path"
	paramIsolation         = "default_transaction_isolation"
	paramSynchronousCommit = "synchronous_commit"
	paramOptions           = "options"
)

var sessionParams = []string{paramSearchPath, paramIsolation, paramSynchronousCommit}

// params are the session's startup parameters that are set, in order.
func (s Session) params() [][2]string {
	var out [][2]string
	for _, p := range [][2]string{{paramSearchPath, s.Schema}, {paramIsolation, s.Isolation.SQL()}, {paramSynchronousCommit, s.SynchronousCommit}} {
		if p[1] != "" {
			out = append(out, p)
		}
	}
	return out
}

// Requested is what every session must read back, in the server's words.
func (s Session) Requested() PGRequested {
	return PGRequested{Isolation: s.Isolation.SQL(), SynchronousCommit: s.SynchronousCommit}
}

// postgresURL parses base as a postgres:// URL; nil when it is a
// key=value string.
func postgresURL(base string) *url.URL {
	if u, err := url.Parse(base); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u
	}
	return nil
}

// DSN is the connection string a Go worker opens: Base with the settings
// as startup parameters, which pgx takes as they are.
func (s Session) DSN() string {
	if u := postgresURL(s.Base); u != nil {
		q := u.Query()
		for _, p := range s.params() {
			q.Set(p[0], p[1])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	parts := []string{strings.TrimSpace(s.Base)}
	for _, p := range s.params() {
		parts = append(parts, p[0]+"="+QuoteConnValue(p[1]))
	}
	return strings.Join(parts, " ")
}

// ProgramDSN is the connection string a program's libpq reads: psql, and
// the drivers built on libpq, refuse search_path and the other settings
// as connection keywords, so they go in options as -c switches, after any
// options Base gives, which the server reads at the start of the session
// just the same. A key=value Base comes back with its values quoted anew.
func (s Session) ProgramDSN() string {
	var opts []string
	for _, p := range s.params() {
		opts = append(opts, "-c "+p[0]+"="+escapeOption(p[1]))
	}
	if u := postgresURL(s.Base); u != nil {
		q := u.Query()
		if o := q.Get(paramOptions); o != "" {
			opts = append([]string{o}, opts...)
		}
		if len(opts) > 0 {
			q.Set(paramOptions, strings.Join(opts, " "))
		}
		// libpq decodes %XX in a URI, not + as a space; Encode writes a
		// literal + as %2B.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String()
	}
	var parts, baseOpts []string
	for _, p := range connValues(s.Base) {
		if p[0] == paramOptions {
			baseOpts = append(baseOpts, p[1])
			continue
		}
		parts = append(parts, p[0]+"="+QuoteConnValue(p[1]))
	}
	if opts = append(baseOpts, opts...); len(opts) > 0 {
		parts = append(parts, paramOptions+"="+QuoteConnValue(strings.Join(opts, " ")))
	}
	return strings.Join(parts, " ")
}

// Set is the statements that give a session already open these settings,
// as the connection string gives a new one: SET LOCAL, for the current
// transaction alone, when local.
func (s Session) Set(local bool) []string {
	verb := "SET "
	if local {
		verb = "SET LOCAL "
	}
	var out []string
	for _, p := range s.params() {
		v := QuoteLiteral(p[1])
		if p[0] == paramSearchPath {
			v = QuoteIdent(p[1])
		}
		out = append(out, verb+p[0]+" TO "+v)
	}
	return out
}

// ParseSession reads a connection string that DSN made, as a results
// folder records it, back into its values: the one reader of recorded
// connection strings, so a folder's recorded program environment is
// derived again from its recorded target. The level may be spelled either
// way (RecordedIsolation). It fails on a level it does not know.
func ParseSession(dsn string) (Session, error) {
	var s Session
	set := func(k, v string) error {
		switch k {
		case paramSearchPath:
			s.Schema = v
		case paramSynchronousCommit:
			s.SynchronousCommit = v
		case paramIsolation:
			l, ok := RecordedIsolation(v)
			if !ok {
				return fmt.Errorf("%s %q: want one of %s", paramIsolation, v, IsolationNames())
			}
			s.Isolation = l
		}
		return nil
	}
	if u := postgresURL(dsn); u != nil {
		q := u.Query()
		for _, k := range sessionParams {
			if err := set(k, q.Get(k)); err != nil {
				return Session{}, err
			}
			q.Del(k)
		}
		u.RawQuery = q.Encode()
		s.Base = u.String()
		return s, nil
	}
	var base []string
	for _, p := range connValues(dsn) {
		if !isSessionParam(p[0]) {
			base = append(base, p[0]+"="+QuoteConnValue(p[1]))
		} else if err := set(p[0], p[1]); err != nil {
			return Session{}, err
		}
	}
	s.Base = strings.Join(base, " ")
	return s, nil
}

func isSessionParam(k string) bool {
	for _, p := range sessionParams {
		if k == p {
			return true
		}
	}
	return false
}

// QuoteConnValue quotes a value of a libpq key=value connection string:
// bare when it holds no space, quote or backslash, else in single quotes
// with \' and \\ inside.
func QuoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// QuoteLiteral quotes v as an SQL string literal, its quotes doubled.
func QuoteLiteral(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// QuoteIdent quotes v as an SQL identifier, its double quotes doubled.
func QuoteIdent(v string) string { return `"` + strings.ReplaceAll(v, `"`, `""`) + `"` }

// escapeOption escapes the backslashes and spaces of a -c value in
// options, which the server splits on unescaped spaces ("read committed").
func escapeOption(v string) string {
	return strings.NewReplacer(`\`, `\\`, " ", `\ `).Replace(v)
}

// connValues splits a libpq key=value string into its pairs, in order,
// undoing the quoting: a value in single quotes may hold spaces, with \'
// and \\ inside.
func connValues(s string) [][2]string {
	var out [][2]string
	rs := []rune(s)
	i := 0
	skip := func() {
		for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t' || rs[i] == '\n') {
			i++
		}
	}
	for {
		skip()
		if i >= len(rs) {
			return out
		}
		start := i
		for i < len(rs) && rs[i] != '=' && rs[i] != ' ' {
			i++
		}
		key := string(rs[start:i])
		skip()
		if i < len(rs) && rs[i] == '=' {
			i++
		}
		skip()
		var v strings.Builder
		quoted := i < len(rs) && rs[i] == '\''
		if quoted {
			i++
		}
		for ; i < len(rs) && ((quoted && rs[i] != '\'') || (!quoted && rs[i] != ' ')); i++ {
			if rs[i] == '\\' && i+1 < len(rs) {
				i++
			}
			v.WriteRune(rs[i])
		}
		if quoted {
			i++
		}
		out = append(out, [2]string{key, v.String()})
	}
}
