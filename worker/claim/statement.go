package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"

	"idemlab/worker/store"
)

// A user's own claim statement runs where the TTL upsert runs, bound to
// the same parameters, so article 003's rounds judge it by the contract
// the TTL claim is judged by. It is checked here before anything runs.

// User is the variant of a user's own statement, which the pool members
// are given on their command line (PoolArgs.ClaimSQL).
const User Variant = "user"

// PathError is the path of a user's statement that failed when it ran:
// its failure is a result, judged by the rounds, and no win.
const PathError Path = "error"

// Param is a parameter a claim statement may bind.
type Param struct{ Name, Meaning string }

// Params are the parameters every claim statement is given, in the order
// the patterns topic lists them (idemlab help patterns).
var Params = []Param{
	{"fp", "the event's fingerprint, event_claims' primary key"},
	{"source", "the event's source"},
	{"level", "the event's level"},
	{"message", "the event's message"},
	{"ts", "the caller's event timestamp (Unix ms): stored as first_seen and last_seen, never trusted for the TTL"},
	{"now", "the worker's own clock (Unix ms): the claim's time, what claimed_at is set to"},
	{"cutoff", "now minus the TTL (ms): a claim with claimed_at < :cutoff has expired"},
}

// MaxStatementBytes bounds a user's statement: it travels on each pool
// member's command line, where Linux allows 128 KiB per argument.
const MaxStatementBytes = 32 << 10

// Statements are a user's claim and, for the old schema, the statement
// it falls back to ("" for none).
type Statements struct {
	Claim, Fallback string
}

// ClaimUser claims ev once with the user's statement. When it fails for
// want of claimed_at and there is a fallback, the fallback decides, as
// the TTL claim falls back to the legacy claim. Any other error is the
// statement's result: the outcome says PathError, the error is returned
// beside it, and the caller records it rather than stopping.
func ClaimUser(ctx context.Context, db *sql.DB, u Statements, ev Event, now int64, ttl time.Duration) (Outcome, error) {
	return ClaimUserOn(ctx, store.SQLiteDB(db), u, ev, now, ttl)
}

// ClaimUserOn is ClaimUser on a store.
func ClaimUserOn(ctx context.Context, db store.Store, u Statements, ev Event, now int64, ttl time.Duration) (Outcome, error) {
	out, err := claimWith(ctx, db, u.Claim, u.Fallback, ev, now, ttl, Outcome{NowMS: now, Path: PathUpsert})
	if err != nil {
		out.Path, out.Won, out.Changes = PathError, false, 0
	}
	return out, err
}

// CheckStatement refuses a statement that could not be a claim on the
// given table layout, and returns the parameters it binds. It must be one
// statement, bind only Params, each as :name, and prepare against a fresh
// event_claims. SQLite's own count of the parameters is compared with the
// ones read here, so a parameter this reading missed is refused too.
func CheckStatement(ctx context.Context, q string, v SchemaVersion) ([]string, error) {
	names, tokens, err := CheckShape(q)
	if err != nil {
		return nil, err
	}
	n, err := prepareCount(ctx, q, v)
	if err != nil {
		return nil, fmt.Errorf("does not prepare against the %s event_claims schema: %w", v, err)
	}
	if n != len(tokens) {
		return nil, fmt.Errorf("has %d parameters by SQLite's count, but %d were read (%s); write each as :name", n, len(tokens), strings.Join(tokens, ", "))
	}
	return names, nil
}

// CheckShape is the part of the check that needs no database: the size,
// one statement, its first word and its parameters, which it returns by
// name and as written. A run on PostgreSQL checks the rest on the server
// (CheckOnServer), where SQLite's prepare would refuse PostgreSQL's own
// syntax.
func CheckShape(q string) (names, tokens []string, err error) {
	switch {
	case len(q) > MaxStatementBytes:
		return nil, nil, fmt.Errorf("is %d bytes, at most %d are allowed", len(q), MaxStatementBytes)
	case !utf8.ValidString(q) || strings.ContainsRune(q, 0):
		return nil, nil, errors.New("is not UTF-8 text without NUL bytes")
	}
	if tokens, err = paramTokens(q); err != nil {
		return nil, nil, err
	}
	if kw := firstWord(q); !slices.Contains(writeWords, strings.ToUpper(kw)) {
		return nil, nil, fmt.Errorf("begins with %q; a claim writes event_claims: begin with %s", kw, strings.Join(writeWords, ", "))
	}
	for _, tok := range tokens {
		name, ok := strings.CutPrefix(tok, ":")
		if !ok || !knownParam(name) {
			return nil, nil, fmt.Errorf("binds %s, which is not a claim parameter; use %s", tok, paramList())
		}
		names = append(names, name)
	}
	return names, tokens, nil
}

// CheckOnServer prepares q, with its parameters bound as a claim binds
// them, against event_claims in layout v, which it creates in st: st is
// a scratch schema of the run's server, made for the check alone. The
// server's message names what it cannot run.
func CheckOnServer(ctx context.Context, st store.Store, q string, v SchemaVersion) error {
	if err := CreateSchema(ctx, st.DB, v); err != nil {
		return err
	}
	var args []sql.NamedArg
	for _, p := range Params {
		args = append(args, sql.Named(p.Name, int64(0)))
	}
	bound, _ := st.Dialect.BindNamed(q, args)
	stmt, err := st.DB.PrepareContext(ctx, bound)
	if err != nil {
		return fmt.Errorf("does not prepare against the %s event_claims schema: %w", v, err)
	}
	return stmt.Close()
}

// writeWords are the words a claim statement may begin with: it writes
// event_claims, and changes neither the schema nor another database, so
// the parent can read every round's row after it.
var writeWords = []string{"INSERT", "REPLACE", "UPDATE", "WITH"}

// firstWord is the statement's first word after blanks and comments.
func firstWord(q string) string {
	i := 0
	for i < len(q) {
		n := blank(q[i:])
		if n == 0 {
			break
		}
		i += n
	}
	j := i
	for j < len(q) && idChar(q[j]) {
		j++
	}
	return q[i:j]
}

func knownParam(name string) bool {
	for _, p := range Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func paramList() string {
	names := make([]string, len(Params))
	for i, p := range Params {
		names[i] = ":" + p.Name
	}
	return strings.Join(names, ", ")
}

// prepareCount prepares q on a scratch in-memory event_claims and returns
// SQLite's count of its parameters.
func prepareCount(ctx context.Context, q string, v SchemaVersion) (int, error) {
	db, err := sql.Open("sqlite3", "file::memory:?mode=memory")
	if err != nil {
		return 0, fmt.Errorf("open a scratch database: %w", err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, schemas[v]); err != nil {
		return 0, fmt.Errorf("create the scratch table: %w", err)
	}
	n := 0
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("scratch connection is a %T", dc)
		}
		st, err := c.Prepare(q)
		if err != nil {
			return err
		}
		n = st.NumInput()
		return st.Close()
	})
	return n, err
}

// paramTokens reads the parameters of one SQL statement the way SQLite's
// tokenizer does, skipping comments, string literals and quoted names,
// and returns each distinct one in order of first use. It refuses an
// empty text and a second statement.
func paramTokens(q string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	statement, ended := false, false
	for i := 0; i < len(q); {
		c := q[i]
		if skip := blank(q[i:]); skip > 0 {
			i += skip
			continue
		}
		if ended {
			return nil, errors.New("is more than one statement; give exactly one")
		}
		switch {
		case c == ';':
			ended = true
			i++
			continue
		case c == '\'' || c == '"' || c == '`' || c == '[':
			n, err := quoted(q[i:])
			if err != nil {
				return nil, err
			}
			i += n
		case strings.HasPrefix(q[i:], "::"):
			// PostgreSQL's cast, which its dialect leaves unbound; on
			// SQLite the prepare refuses it in SQLite's words.
			i += 2
		case c == '?' || c == ':' || c == '@' || c == '$' || c == '#':
			tok := variable(q[i:])
			if !seen[tok] {
				seen[tok] = true
				out = append(out, tok)
			}
			i += len(tok)
		case idChar(c):
			for i < len(q) && idChar(q[i]) {
				i++
			}
		default:
			i++
		}
		statement = true
	}
	if !statement {
		return nil, errors.New("is empty: it holds only whitespace and comments")
	}
	return out, nil
}

// blank is the length of the whitespace or comment at the start of s.
func blank(s string) int {
	switch {
	case s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r' || s[0] == '\f':
		return 1
	case strings.HasPrefix(s, "--"):
		if j := strings.IndexByte(s, '\n'); j >= 0 {
			return j + 1
		}
		return len(s)
	case strings.HasPrefix(s, "/*"):
		if j := strings.Index(s[2:], "*/"); j >= 0 {
			return j + 4
		}
		return len(s)
	}
	return 0
}

// quoted is the length of the literal or quoted name at the start of s; a
// doubled closing quote inside it stands for itself, except in [names].
func quoted(s string) (int, error) {
	closing := s[0]
	if closing == '[' {
		closing = ']'
	}
	i := 1
	for {
		j := strings.IndexByte(s[i:], closing)
		if j < 0 {
			return 0, fmt.Errorf("has an unterminated %c", s[0])
		}
		i += j + 1
		if closing == ']' || i >= len(s) || s[i] != closing {
			return i, nil
		}
		i++
	}
}

// variable is the parameter token at the start of s: "?" and its digits,
// or a prefix and a name, with the "::" and "(...)" suffixes SQLite takes.
func variable(s string) string {
	i := 1
	if s[0] == '?' {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[:i]
	}
	n := 0
	for i < len(s) {
		switch c := s[i]; {
		case idChar(c):
			i++
			n++
		case c == '(' && n > 0:
			if j := strings.IndexByte(s[i:], ')'); j >= 0 {
				return s[:i+j+1]
			}
			return s
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			i += 2
		default:
			return s[:i]
		}
	}
	return s[:i]
}

// idChar is SQLite's identifier character: letters, digits, _, $ and
// every byte of a non-ASCII character.
func idChar(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}
