package batch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// Status is a journal row's state.
type Status string

// The three states of the article.
const (
	// InFlight is written before a step runs; a row left in it means the
	// process stopped while the step ran.
	InFlight Status = "IN_FLIGHT"
	// Succeeded is written after the step returned.
	Succeeded Status = "SUCCEEDED"
	// Failed is written when the step returned an error.
	Failed Status = "FAILED"
)

// Schema is the article's step_journal, column for column, with the same
// primary key, as SQLite stores it. It is stored WITHOUT ROWID: the
// primary key is then the table's only b-tree, so each state change writes
// one b-tree page instead of a table page and its index page, about a
// sixth of an executed step's cost (62 to 52 µs in one benchmark run).
// Rows, keys and constraints are the article's.
var Schema = SchemaOn(store.SQLite{})

// SchemaOn is the table in dialect d's words: the same columns, key and
// constraint on every backend.
func SchemaOn(d store.Dialect) string {
	return `
CREATE TABLE IF NOT EXISTS step_journal (
    job_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    step_name TEXT NOT NULL,
    status TEXT NOT NULL CHECK(status IN ('IN_FLIGHT', 'SUCCEEDED', 'FAILED')),
    payload_digest TEXT NOT NULL,
    receipt TEXT,
    error_type TEXT,
    updated_at ` + d.FloatType() + ` NOT NULL,
    PRIMARY KEY (job_id, item_id, step_name)
)` + d.KeyedTable()
}

// The refusals of resolve, as the article states them.
var (
	// ErrNoRow means there is no journal row for the key, so there is
	// nothing unresolved to resolve.
	ErrNoRow = errors.New("no journal row for this job, item and step")
	// ErrAlreadySucceeded means the row is SUCCEEDED; resolving it could
	// only erase a completed step.
	ErrAlreadySucceeded = errors.New("the step is already SUCCEEDED")
	// ErrReceiptRequired means delivered=true came without the receiver's
	// receipt, the evidence that the send was accepted.
	ErrReceiptRequired = errors.New("delivered=true needs the receiver's receipt")
	// ErrNotJournal means the file has no step_journal table.
	ErrNotJournal = errors.New("not a step journal (no step_journal table)")
)

// Row is one journal row as the resume rules need it.
type Row struct {
	Step      string
	Status    Status
	Digest    string
	Receipt   string
	ErrorType string
}

// Options returns the article's settings for a journal file: WAL with
// synchronous=NORMAL, so a commit costs a WAL append and no fsync. The
// locking mode is EXCLUSIVE, which the article does not set: the article
// assumes one process per job, and an exclusive lock both enforces that (a
// second process gets SQLITE_BUSY instead of interleaving its steps) and
// spares each commit the shared-memory lock calls, about a fifth of a
// commit's cost on this project's machines.
func Options(path string) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: "WAL", Synchronous: "NORMAL", BusyTimeout: 5 * time.Second, LockingMode: "EXCLUSIVE"}
}

// Journal is an open step journal with its statements prepared once,
// since a statement prepared per step would cost more than the step's
// commit.
type Journal struct {
	st store.Store
	// Settings are what a SQLite file read back, Postgres what a
	// PostgreSQL session did; the other is zero.
	Settings sqlitedb.Settings
	Postgres *store.PGSettings
	// Retries counts the marks run again after a serialization failure
	// or a deadlock (PostgreSQL's 40001 and 40P01).
	Retries  int
	upsert   *sql.Stmt
	itemRows *sql.Stmt
	// now is the clock for updated_at; tests may replace it.
	now func() time.Time
}

// MaxMarkAttempts bounds how often one mark is tried when a concurrent
// transaction makes it fail with a serialization failure or a deadlock.
const MaxMarkAttempts = 50

// OpenJournal opens the SQLite file path, creating the table when create
// is true. Without create, a file lacking the table is refused with
// ErrNotJournal, so that resolve never turns a mistyped path into a new
// empty journal.
func OpenJournal(ctx context.Context, path string, create bool) (*Journal, error) {
	return OpenJournalOn(ctx, store.BackendSQLite, path, create)
}

// OpenJournalOn is OpenJournal on either backend: target is a SQLite file
// or a PostgreSQL connection string, and what differs in the statements
// comes from the store's dialect.
func OpenJournalOn(ctx context.Context, backend, target string, create bool) (*Journal, error) {
	opts, err := sqlitedb.FromEnv(Options(target))
	if err != nil {
		return nil, err
	}
	st, rb, err := store.Open(ctx, backend, target, opts)
	if err != nil {
		return nil, err
	}
	j := &Journal{st: st, Postgres: rb.Postgres, now: time.Now}
	if rb.SQLite != nil {
		j.Settings = *rb.SQLite
	}
	if err := j.prepare(ctx, target, create); err != nil {
		st.Close()
		return nil, err
	}
	return j, nil
}

// prepare makes or finds the table and prepares the two statements every
// step runs.
func (j *Journal) prepare(ctx context.Context, target string, create bool) error {
	db, q := j.st.DB, j.st.Dialect.Rebind
	if create {
		if _, err := db.ExecContext(ctx, SchemaOn(j.st.Dialect)); err != nil {
			return fmt.Errorf("create step_journal: %w", err)
		}
	} else if ok, err := j.st.HasTable(ctx, "step_journal"); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("open journal %s: %w", target, ErrNotJournal)
	}
	var err error
	j.upsert, err = db.PrepareContext(ctx, q(`
INSERT INTO step_journal (job_id, item_id, step_name, status, payload_digest, receipt, error_type, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(job_id, item_id, step_name) DO UPDATE SET
    status = excluded.status,
    payload_digest = excluded.payload_digest,
    receipt = excluded.receipt,
    error_type = excluded.error_type,
    updated_at = excluded.updated_at`))
	if err != nil {
		return fmt.Errorf("prepare mark: %w", err)
	}
	j.itemRows, err = db.PrepareContext(ctx, q(`
SELECT step_name, status, payload_digest FROM step_journal WHERE job_id = ? AND item_id = ?`))
	if err != nil {
		return fmt.Errorf("prepare item rows: %w", err)
	}
	return nil
}

// Close closes the statements and the file.
func (j *Journal) Close() error {
	j.upsert.Close()
	j.itemRows.Close()
	if err := j.st.Close(); err != nil {
		return fmt.Errorf("close journal: %w", err)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Mark writes one row's new state in its own transaction (an autocommit
// statement), as the article does: each state change is durable on its own
// before the next step begins. A mark that a concurrent run's transaction
// made fail with a serialization failure or a deadlock is run again, at
// most MaxMarkAttempts times: the upsert overwrites the row whole, so a
// second try writes what the first would have. SQLite's busy file is not
// retried here; its busy timeout waits instead.
func (j *Journal) Mark(ctx context.Context, k wire.Key, st Status, digest, receipt, errorType string) error {
	for attempt := 1; ; attempt++ {
		ts := float64(j.now().UnixNano()) / 1e9
		_, err := j.upsert.ExecContext(ctx, k.Job, k.Item, k.Step, string(st), digest, nullable(receipt), nullable(errorType), ts)
		if err == nil {
			return nil
		}
		if c := j.st.Dialect.Classify(err); (c == store.ClassSerialization || c == store.ClassDeadlock) && attempt < MaxMarkAttempts {
			j.Retries++
			continue
		}
		return fmt.Errorf("mark %s %s: %w", k, st, err)
	}
}

// ItemState is what the resume rules need to know of one step's row.
type ItemState struct {
	// Status is empty when the step has no row.
	Status Status
	// SameDigest is true when the row's payload_digest equals the digest
	// the caller passed.
	SameDigest bool
}

// ItemStates reads every row of one item in a single query, so that a
// resumed item costs one read instead of one per step. The states are
// indexed like Steps. Columns are compared as raw bytes, which spares a
// string allocation per column on the path every skipped step takes.
func (j *Journal) ItemStates(ctx context.Context, job, item, digest string) ([len(Steps)]ItemState, error) {
	var out [len(Steps)]ItemState
	rs, err := j.itemRows.QueryContext(ctx, job, item)
	if err != nil {
		return out, fmt.Errorf("read rows of %s:%s: %w", job, item, err)
	}
	defer rs.Close()
	var step, st, dg sql.RawBytes
	for rs.Next() {
		if err := rs.Scan(&step, &st, &dg); err != nil {
			return out, fmt.Errorf("read rows of %s:%s: %w", job, item, err)
		}
		i := stepIndex(step)
		if i < 0 {
			continue
		}
		out[i] = ItemState{Status: parseStatus(st), SameDigest: string(dg) == digest}
	}
	if err := rs.Err(); err != nil {
		return out, fmt.Errorf("read rows of %s:%s: %w", job, item, err)
	}
	return out, nil
}

func stepIndex(b []byte) int {
	for i, s := range Steps {
		if string(b) == s {
			return i
		}
	}
	return -1
}

// parseStatus maps the column to a constant without allocating. The
// CHECK constraint admits only the three values.
func parseStatus(b []byte) Status {
	switch string(b) {
	case string(Succeeded):
		return Succeeded
	case string(InFlight):
		return InFlight
	case string(Failed):
		return Failed
	}
	return Status(b)
}

// Get reads one row; ok is false when it does not exist.
func (j *Journal) Get(ctx context.Context, k wire.Key) (r Row, ok bool, err error) {
	var st string
	err = j.st.DB.QueryRowContext(ctx, j.st.Dialect.Rebind(`
SELECT step_name, status, payload_digest, coalesce(receipt, ''), coalesce(error_type, '')
FROM step_journal WHERE job_id = ? AND item_id = ? AND step_name = ?`), k.Job, k.Item, k.Step).
		Scan(&r.Step, &st, &r.Digest, &r.Receipt, &r.ErrorType)
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, false, nil
	}
	if err != nil {
		return Row{}, false, fmt.Errorf("read row %s: %w", k, err)
	}
	r.Status = Status(st)
	return r, true, nil
}

// Resolve records what a person found at the receiver for a step whose
// outcome was unknown. delivered=true marks it SUCCEEDED with the receipt,
// so it is never sent again; delivered=false deletes the row, so the next
// run sends it. It refuses a missing or SUCCEEDED row and a delivered=true
// without receipt. The check and the change share one BEGIN IMMEDIATE
// transaction, so no run can slip between them.
func (j *Journal) Resolve(ctx context.Context, k wire.Key, delivered bool, receipt string) error {
	if delivered && receipt == "" {
		return fmt.Errorf("resolve %s: %w", k, ErrReceiptRequired)
	}
	q := j.st.Dialect.Rebind
	tx, err := j.st.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin resolve: %w", err)
	}
	defer tx.Rollback()
	var st string
	err = tx.QueryRowContext(ctx, q("SELECT status FROM step_journal WHERE job_id = ? AND item_id = ? AND step_name = ?"), k.Job, k.Item, k.Step).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("resolve %s: %w", k, ErrNoRow)
	}
	if err != nil {
		return fmt.Errorf("resolve %s: read row: %w", k, err)
	}
	if Status(st) == Succeeded {
		return fmt.Errorf("resolve %s: %w", k, ErrAlreadySucceeded)
	}
	if delivered {
		_, err = tx.ExecContext(ctx, q(`UPDATE step_journal SET status = 'SUCCEEDED', receipt = ?, error_type = NULL, updated_at = ?
WHERE job_id = ? AND item_id = ? AND step_name = ?`), receipt, float64(j.now().UnixNano())/1e9, k.Job, k.Item, k.Step)
	} else {
		_, err = tx.ExecContext(ctx, q("DELETE FROM step_journal WHERE job_id = ? AND item_id = ? AND step_name = ?"), k.Job, k.Item, k.Step)
	}
	if err != nil {
		return fmt.Errorf("resolve %s: write: %w", k, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("resolve %s: commit: %w", k, err)
	}
	return nil
}
