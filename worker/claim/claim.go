// Package claim is the child side of article 003: one caller claiming an
// event fingerprint in event_claims, either with the legacy one-time claim
// (ON CONFLICT DO NOTHING) or with the TTL conditional upsert, plus the
// article's five deliberate bugs as named variants, so that the parent can
// show that its rounds catch each of them.
package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Variant names one way of claiming. The two real claims come first; the
// mutants are the article's deliberate bugs, each a complete statement of
// its own, so that a mutant is exactly one visible change away from TTL.
type Variant string

// The claims and the mutants.
const (
	// Legacy is the one-time claim: the first caller inserts the row and
	// every later caller loses for as long as the row exists.
	Legacy Variant = "legacy"
	// TTL is the fix: a conditional upsert that lets a caller re-claim a row
	// whose claim is NULL or older than the TTL.
	TTL Variant = "ttl"

	// MutantDoNothing goes back to ON CONFLICT DO NOTHING while still
	// writing claimed_at.
	MutantDoNothing Variant = "mutant-do-nothing"
	// MutantNoWhere drops the WHERE clause, so every caller re-claims.
	MutantNoWhere Variant = "mutant-no-where"
	// MutantNullExcluded forgets rows whose claimed_at is NULL.
	MutantNullExcluded Variant = "mutant-null-excluded"
	// MutantBoundaryFlipped uses <= where TTL uses <.
	MutantBoundaryFlipped Variant = "mutant-boundary-flipped"
	// MutantCallerTime takes now from the caller's event timestamp instead
	// of the worker's own clock.
	MutantCallerTime Variant = "mutant-caller-time"
)

// Claims are the two real claims, in the article's order.
var Claims = []Variant{Legacy, TTL}

// Mutants are the article's five deliberate bugs, in the article's order.
var Mutants = []Variant{MutantDoNothing, MutantNoWhere, MutantNullExcluded, MutantBoundaryFlipped, MutantCallerTime}

// Path says which statement decided a claim.
type Path string

// The statements a claim can end up running.
const (
	// PathLegacy is the DO NOTHING insert, chosen on purpose.
	PathLegacy Path = "legacy"
	// PathUpsert is the conditional upsert (or a mutant of it).
	PathUpsert Path = "upsert"
	// PathFallback is the DO NOTHING insert run because the upsert found
	// no claimed_at column: the database is still on the old schema.
	PathFallback Path = "fallback-legacy"
)

// Boundary is the comparison at exactly the TTL. TTL uses BoundaryStrict:
// a claim taken at T is held through T+ttl inclusive and can be taken again
// from T+ttl+1 ms. The TTL is a lease that equals the cache TTL in front of
// the claim; at the exact boundary the first holder may still be working,
// and a tie should fall on the side of fewer winners, because a second
// winner is the duplicate downstream work the claim exists to prevent. The
// price is one millisecond of extra wait. It is also the article's SQL.
type Boundary string

// The two possible boundary choices.
const (
	// BoundaryStrict is claimed_at < now - ttl: at exactly the TTL the old
	// claim still holds.
	BoundaryStrict Boundary = "<"
	// BoundaryInclusive is claimed_at <= now - ttl: at exactly the TTL the
	// claim can be taken again.
	BoundaryInclusive Boundary = "<="
)

// Chosen is the documented boundary of the TTL claim.
const Chosen = BoundaryStrict

// SchemaVersion selects the table layout.
type SchemaVersion string

// The two layouts: before and after the migration that added claimed_at.
const (
	SchemaNew SchemaVersion = "new"
	SchemaOld SchemaVersion = "old"
)

// schemas create event_claims. classification and external_id are the
// downstream fields: only the winner's follow-up writes them, and a
// re-claim must never touch them.
var schemas = map[SchemaVersion]string{
	SchemaNew: `CREATE TABLE event_claims (
  fingerprint    TEXT PRIMARY KEY NOT NULL,
  source         TEXT NOT NULL,
  level          TEXT NOT NULL,
  message        TEXT NOT NULL,
  first_seen     BIGINT NOT NULL,
  last_seen      BIGINT NOT NULL,
  count          BIGINT NOT NULL,
  claimed_at     BIGINT,
  classification TEXT,
  external_id    TEXT
)`,
	SchemaOld: `CREATE TABLE event_claims (
  fingerprint    TEXT PRIMARY KEY NOT NULL,
  source         TEXT NOT NULL,
  level          TEXT NOT NULL,
  message        TEXT NOT NULL,
  first_seen     BIGINT NOT NULL,
  last_seen      BIGINT NOT NULL,
  count          BIGINT NOT NULL,
  classification TEXT,
  external_id    TEXT
)`,
}

// Event is what a caller sends. Time is the event's own timestamp in Unix
// milliseconds: it is stored as first_seen and last_seen, and never used to
// decide the TTL, since a caller's clock can be wrong or forged.
type Event struct {
	Fingerprint string `json:"fingerprint"`
	Source      string `json:"source"`
	Level       string `json:"level"`
	Message     string `json:"message"`
	Time        int64  `json:"time_ms"`
}

// Outcome is what one claim did.
type Outcome struct {
	// Won is true when the statement changed one row.
	Won bool `json:"won"`
	// Changes is the statement's RowsAffected.
	Changes int64 `json:"changes"`
	// Path is the statement that decided the claim.
	Path Path `json:"path"`
	// NowMS is the now the claim used for the TTL.
	NowMS int64 `json:"now_ms"`
	// BusyRetries counts statements that returned SQLITE_BUSY after the
	// busy timeout and were run again.
	BusyRetries int `json:"busy_retries"`
	// SerializationRetries and DeadlockRetries count PostgreSQL's 40001
	// and 40P01, after which the statement, its own transaction, was run
	// again.
	SerializationRetries int `json:"serialization_retries,omitempty"`
	DeadlockRetries      int `json:"deadlock_retries,omitempty"`
}

// count adds one retry of class c.
func (o *Outcome) count(c store.Class) {
	switch c {
	case store.ClassBusy:
		o.BusyRetries++
	case store.ClassSerialization:
		o.SerializationRetries++
	case store.ClassDeadlock:
		o.DeadlockRetries++
	}
}

// retries is every retry the claim made.
func (o Outcome) retries() int { return o.BusyRetries + o.SerializationRetries + o.DeadlockRetries }

// Errors a claim can return.
var (
	// ErrUnknownVariant is a variant name that is not defined.
	ErrUnknownVariant = errors.New("unknown claim variant")
	// ErrTooBusy means SQLITE_BUSY, or a serialization failure or a
	// deadlock, persisted through every retry.
	ErrTooBusy = errors.New("database stayed busy")
)

// MaxBusyRetries bounds the retries of one statement after SQLITE_BUSY,
// 40001 or 40P01.
const MaxBusyRetries = 50

// ParseVariant checks a variant name.
func ParseVariant(s string) (Variant, error) {
	for _, v := range append(append([]Variant{}, Claims...), Mutants...) {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w %q", ErrUnknownVariant, s)
}

// ParseSchema checks a schema version name.
func ParseSchema(s string) (SchemaVersion, error) {
	if _, ok := schemas[SchemaVersion(s)]; ok {
		return SchemaVersion(s), nil
	}
	return "", fmt.Errorf("unknown schema version %q", s)
}

// Options returns the claim database settings: WAL so that readers never
// block the racing writers, and a busy timeout so that a writer waits for
// the lock instead of failing at once.
func Options(path string, busyTimeout time.Duration) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: "WAL", Synchronous: "NORMAL", BusyTimeout: busyTimeout}
}

// CreateSchema creates event_claims in the given layout.
func CreateSchema(ctx context.Context, db *sql.DB, v SchemaVersion) error {
	ddl, err := DDL(v)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

// EnsureTable creates event_claims in the new layout unless the database
// has it, so every claimer can be the first.
func EnsureTable(ctx context.Context, st store.Store) error {
	ok, err := st.HasTable(ctx, TableClaims)
	if err != nil || ok {
		return err
	}
	return CreateSchema(ctx, st.DB, SchemaNew)
}

// NewDDL is the statement that creates event_claims in the current
// layout (SchemaNew).
func NewDDL() string { return schemas[SchemaNew] }

// DDL is the statement that creates event_claims in layout v.
func DDL(v SchemaVersion) (string, error) {
	ddl, ok := schemas[v]
	if !ok {
		return "", fmt.Errorf("create schema: unknown schema version %q", v)
	}
	return ddl, nil
}

const legacySQL = `INSERT INTO event_claims
  (fingerprint, source, level, message, first_seen, last_seen, count)
VALUES (:fp, :source, :level, :message, :ts, :ts, 1)
ON CONFLICT(fingerprint) DO NOTHING`

const upsertHead = `INSERT INTO event_claims
  (fingerprint, source, level, message, first_seen, last_seen, count, claimed_at)
VALUES (:fp, :source, :level, :message, :ts, :ts, 1, :now)
ON CONFLICT(fingerprint) DO `

// upsertSet and the WHERE clauses name the existing row's columns with
// the table's name, which both SQLite and PostgreSQL read as that row;
// PostgreSQL refuses a bare count or claimed_at there as ambiguous with
// excluded's.
const upsertSet = `UPDATE SET
  claimed_at = excluded.claimed_at,
  last_seen = excluded.last_seen,
  count = event_claims.count + 1`

// statements holds the SQL of every variant that runs the upsert. Each
// mutant differs from TTL in exactly the place its name says.
var statements = map[Variant]string{
	TTL:                   upsertHead + upsertSet + "\nWHERE event_claims.claimed_at IS NULL OR event_claims.claimed_at < :cutoff",
	MutantDoNothing:       upsertHead + "NOTHING",
	MutantNoWhere:         upsertHead + upsertSet,
	MutantNullExcluded:    upsertHead + upsertSet + "\nWHERE event_claims.claimed_at IS NOT NULL AND event_claims.claimed_at < :cutoff",
	MutantBoundaryFlipped: upsertHead + upsertSet + "\nWHERE event_claims.claimed_at IS NULL OR event_claims.claimed_at <= :cutoff",
	MutantCallerTime:      upsertHead + upsertSet + "\nWHERE event_claims.claimed_at IS NULL OR event_claims.claimed_at < :cutoff",
}

// SQL returns the statement a variant runs against the new schema.
func SQL(v Variant) (string, error) {
	if v == Legacy {
		return legacySQL, nil
	}
	s, ok := statements[v]
	if !ok {
		return "", fmt.Errorf("%w %q", ErrUnknownVariant, v)
	}
	return s, nil
}

// Claim claims ev once with variant v on a SQLite handle; see ClaimOn.
func Claim(ctx context.Context, db *sql.DB, v Variant, ev Event, now int64, ttl time.Duration) (Outcome, error) {
	return ClaimOn(ctx, store.SQLiteDB(db), v, ev, now, ttl)
}

// ClaimOn claims ev once with variant v. now is the worker's own clock in
// Unix milliseconds; tests pass it directly. The caller's ev.Time is only
// stored, except by MutantCallerTime, whose bug is to use it. The statement
// runs on its own, in autocommit: SQLite applies statements on one row one
// after another, and PostgreSQL under READ COMMITTED makes a racer wait
// for the row's lock and re-check WHERE against the winner's row, so
// among racing callers exactly one changes the row. Under REPEATABLE READ
// and SERIALIZABLE PostgreSQL refuses the losers with 40001 instead, and
// the statement runs again, a bounded number of times.
func ClaimOn(ctx context.Context, db store.Store, v Variant, ev Event, now int64, ttl time.Duration) (Outcome, error) {
	out := Outcome{NowMS: now, Path: PathUpsert}
	if v == MutantCallerTime {
		now = ev.Time
		out.NowMS = now
	}
	if v == Legacy {
		out.Path = PathLegacy
		return exec(ctx, db, legacySQL, ev, now, ttl, out)
	}
	q, ok := statements[v]
	if !ok {
		return out, fmt.Errorf("claim: %w %q", ErrUnknownVariant, v)
	}
	return claimWith(ctx, db, q, legacySQL, ev, now, ttl, out)
}

// claimWith runs statement q and, when it fails because the table has no
// claimed_at column, the fallback ("" for none). The migration has not
// reached this database yet: deciding with the old claim keeps one
// winner, where treating the error as a win would make every caller one.
func claimWith(ctx context.Context, db store.Store, q, fallback string, ev Event, now int64, ttl time.Duration, out Outcome) (Outcome, error) {
	res, err := exec(ctx, db, q, ev, now, ttl, out)
	if err != nil && fallback != "" && missingClaimedAt(db.Dialect, err) {
		res.Path = PathFallback
		return exec(ctx, db, fallback, ev, now, ttl, res)
	}
	return res, err
}

func exec(ctx context.Context, db store.Store, q string, ev Event, now int64, ttl time.Duration, out Outcome) (Outcome, error) {
	args := []sql.NamedArg{
		sql.Named("fp", ev.Fingerprint), sql.Named("source", ev.Source), sql.Named("level", ev.Level),
		sql.Named("message", ev.Message), sql.Named("ts", ev.Time),
	}
	if strings.Contains(q, ":now") {
		args = append(args, sql.Named("now", now))
	}
	if strings.Contains(q, ":cutoff") {
		args = append(args, sql.Named("cutoff", now-ttl.Milliseconds()))
	}
	q, bound := db.Dialect.BindNamed(q, args)
	for {
		res, err := db.DB.ExecContext(ctx, q, bound...)
		if c := db.Dialect.Classify(err); c.Retryable() {
			if out.retries() >= MaxBusyRetries {
				return out, fmt.Errorf("claim %s: %w after %d retries: %w", ev.Fingerprint, ErrTooBusy, out.retries(), err)
			}
			out.count(c)
			continue
		}
		if err != nil {
			return out, fmt.Errorf("claim %s: %w", ev.Fingerprint, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return out, fmt.Errorf("claim %s: read changes: %w", ev.Fingerprint, err)
		}
		out.Changes = n
		out.Won = n == 1
		return out, nil
	}
}

// missingClaimedAt reports whether err is the database refusing the
// upsert because event_claims has no claimed_at column. Only that exact
// cause falls back; any other error stays an error.
func missingClaimedAt(d store.Dialect, err error) bool {
	return d.Classify(err) == store.ClassUndefinedColumn && strings.Contains(err.Error(), "claimed_at")
}

// FollowUp is the winner's downstream processing on a SQLite handle; see
// FollowUpOn.
func FollowUp(ctx context.Context, db *sql.DB, fingerprint, classification, externalID string) (busyRetries int, err error) {
	out, err := FollowUpOn(ctx, store.SQLiteDB(db), fingerprint, classification, externalID)
	return out.BusyRetries, err
}

// FollowUpOn writes the fields that a re-claim must leave alone, and
// returns the retries it made, counted as a claim's are.
func FollowUpOn(ctx context.Context, db store.Store, fingerprint, classification, externalID string) (Outcome, error) {
	var out Outcome
	for {
		_, err := db.ExecContext(ctx,
			"UPDATE event_claims SET classification = ?, external_id = ? WHERE fingerprint = ?",
			classification, externalID, fingerprint)
		if c := db.Dialect.Classify(err); c.Retryable() && out.retries() < MaxBusyRetries {
			out.count(c)
			continue
		}
		if err != nil {
			return out, fmt.Errorf("write downstream fields of %s: %w", fingerprint, err)
		}
		return out, nil
	}
}
