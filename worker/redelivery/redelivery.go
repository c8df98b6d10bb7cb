// Package redelivery is the child side of article 000: one delivery of a
// completion event, handled by one of the two patterns, with named crash
// points between its durable steps.
package redelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// WorkerName is the registry name of the delivering worker; the parent
// spawns it and the fold checks recorded command lines against it.
const WorkerName = "redelivery.deliver"

// Pattern is how the follow-up job and the processed-event record are written.
type Pattern string

// The two patterns of the article.
const (
	// SeparateCommit commits the job, then commits the processed record.
	SeparateCommit Pattern = "separate-commit"
	// SingleTransaction claims the event with INSERT OR IGNORE and inserts
	// the job in the same transaction.
	SingleTransaction Pattern = "single-transaction"
)

// Patterns lists the patterns in the order the article presents them.
var Patterns = []Pattern{SeparateCommit, SingleTransaction}

// TTLClaim is the broker consumer's third pattern (redelivery.consume with
// -claim-ttl): it claims the event with article 003's TTL conditional
// upsert on event_claims and, if it won, inserts the job. The claim is the
// only guard, as Powertools' in-progress record is: no processed check.
const TTLClaim Pattern = "ttl-claim"

// Crash points, in the order a first delivery passes them.
const (
	PointAfterJobInsert       = "after-job-insert"
	PointAfterJobCommit       = "after-job-commit"
	PointAfterProcessedCommit = "after-processed-commit"
	PointAfterProcessedInsert = "after-processed-insert"
	PointBeforeCommit         = "before-commit"
	PointAfterCommit          = "after-commit"
)

// Schema is the article's: no unique constraint on follow_up_jobs, so a
// second job for one event is possible and visible.
const Schema = `
CREATE TABLE IF NOT EXISTS follow_up_jobs (event_id TEXT NOT NULL, job_key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS processed_events (event_id TEXT PRIMARY KEY NOT NULL);`

// Event is the delivered message.
type Event struct {
	ID     string `json:"event_id"`
	JobKey string `json:"job_key"`
}

// Outcome says what one delivery did.
type Outcome struct {
	// AlreadyProcessed is true when the event was found processed.
	AlreadyProcessed bool `json:"already_processed"`
	// JobInserted is true when this delivery inserted a follow-up job.
	JobInserted bool `json:"job_inserted"`
}

// Result is the worker's report payload. Settings are what a SQLite
// connection read back, Postgres what a PostgreSQL session did; the other
// is left out.
type Result struct {
	Pattern  Pattern           `json:"pattern"`
	Outcome  Outcome           `json:"outcome"`
	Settings sqlitedb.Settings `json:"settings,omitzero"`
	Postgres *store.PGSettings `json:"postgres,omitempty"`
	// Broker is the broker's word, from redelivery.consume only.
	Broker *Consumed `json:"broker,omitempty"`
}

// ErrUnknownPattern is returned for a pattern name that is not defined.
var ErrUnknownPattern = errors.New("unknown pattern")

// ParsePattern checks a pattern name.
func ParsePattern(s string) (Pattern, error) {
	for _, p := range append(Patterns, TTLClaim) {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w %q", ErrUnknownPattern, s)
}

// EnsureSchema creates the tables if they are missing.
func EnsureSchema(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, Schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

// Deliver handles ev once with pattern p on a SQLite handle. It calls
// pts.Hit at every crash point; a chosen point ends the process there.
func Deliver(ctx context.Context, db *sql.DB, p Pattern, ev Event, pts *protocol.Points) (Outcome, error) {
	return DeliverOn(ctx, store.SQLiteDB(db), p, ev, pts)
}

// DeliverOn is Deliver on either backend: the statements that differ come
// from the store's dialect. Rollback is deliberately not deferred: a crash
// must leave the database exactly as a dead process would.
func DeliverOn(ctx context.Context, st store.Store, p Pattern, ev Event, pts *protocol.Points) (Outcome, error) {
	switch p {
	case SeparateCommit:
		return deliverSeparate(ctx, st, ev, pts)
	case SingleTransaction:
		return deliverSingle(ctx, st, ev, pts)
	case TTLClaim:
		return Outcome{}, fmt.Errorf("deliver: %s needs its TTL: only %s runs it, with -claim-ttl", p, ConsumerName)
	}
	return Outcome{}, fmt.Errorf("deliver: %w %q", ErrUnknownPattern, p)
}

func deliverSeparate(ctx context.Context, st store.Store, ev Event, pts *protocol.Points) (Outcome, error) {
	db, q := st.DB, st.Dialect.Rebind
	var out Outcome
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("begin job transaction: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, q("SELECT count(*) FROM processed_events WHERE event_id = ?"), ev.ID).Scan(&n); err != nil {
		tx.Rollback()
		return out, fmt.Errorf("check processed event: %w", err)
	}
	if n > 0 {
		out.AlreadyProcessed = true
		return out, tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, q("INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)"), ev.ID, ev.JobKey); err != nil {
		tx.Rollback()
		return out, fmt.Errorf("insert job: %w", err)
	}
	pts.Hit(PointAfterJobInsert)
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("commit job: %w", err)
	}
	out.JobInserted = true
	pts.Hit(PointAfterJobCommit)
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("begin processed transaction: %w", err)
	}
	if _, err := tx.ExecContext(ctx, q("INSERT INTO processed_events (event_id) VALUES (?)"), ev.ID); err != nil {
		tx.Rollback()
		return out, fmt.Errorf("insert processed event: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("commit processed event: %w", err)
	}
	pts.Hit(PointAfterProcessedCommit)
	return out, nil
}

func deliverSingle(ctx context.Context, st store.Store, ev Event, pts *protocol.Points) (Outcome, error) {
	db, q := st.DB, st.Dialect.Rebind
	var out Outcome
	// On SQLite, BEGIN IMMEDIATE: the DSN sets _txlock=immediate.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("begin transaction: %w", err)
	}
	res, err := tx.ExecContext(ctx, q(st.Dialect.InsertIgnore("INTO processed_events (event_id) VALUES (?)")), ev.ID)
	if err != nil {
		tx.Rollback()
		return out, fmt.Errorf("claim event: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		tx.Rollback()
		return out, fmt.Errorf("claim event: %w", err)
	}
	pts.Hit(PointAfterProcessedInsert)
	if n == 1 {
		if _, err := tx.ExecContext(ctx, q("INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)"), ev.ID, ev.JobKey); err != nil {
			tx.Rollback()
			return out, fmt.Errorf("insert job: %w", err)
		}
		out.JobInserted = true
	} else {
		out.AlreadyProcessed = true
	}
	pts.Hit(PointBeforeCommit)
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("commit: %w", err)
	}
	pts.Hit(PointAfterCommit)
	return out, nil
}

// Main is the registered worker "redelivery.deliver". It opens the file,
// delivers the event once and exits 0 as the simulated ACK.
func Main(call *protocol.Call) int {
	a, err := ParseArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	st, rb, usage, err := open(ctx, a.Backend, a.DB)
	if usage != nil {
		return call.Usage(usage)
	}
	if err != nil {
		return call.Fail(err)
	}
	if err := EnsureSchema(ctx, st.DB); err != nil {
		return call.Fail(err)
	}
	out, err := DeliverOn(ctx, st, a.Pattern, a.Event, call.Points)
	if err != nil {
		return call.Fail(err)
	}
	res := Result{Pattern: a.Pattern, Outcome: out, Postgres: rb.Postgres}
	if rb.SQLite != nil {
		res.Settings = *rb.SQLite
	}
	call.AckOpen(res)
	if err := st.Close(); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	return call.Finish(res, protocol.ExitACK)
}

// open opens a worker's database with the connection settings the
// environment asks for. usage is the environment's error, err the
// database's.
func open(ctx context.Context, backend, db string) (st store.Store, rb store.ReadBack, usage, err error) {
	opts, usage := sqlitedb.FromEnv(Options(db))
	if usage != nil {
		return st, rb, usage, nil
	}
	st, rb, err = store.Open(ctx, backend, db, opts)
	return st, rb, nil, err
}
