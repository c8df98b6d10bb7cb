package pattern

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Delivery is who delivers the event, and when.
type Delivery struct {
	EventID string
	// Number is 1 for the first delivery, 2 for the next, and so on.
	Number int
	// Worker is the racer's slot in a concurrent delivery, else 0.
	Worker int
	// NowMS is the worker's clock plus the delivery's offset, read once.
	NowMS int64
	// Ack, when set, acknowledges the delivery to whoever delivered it;
	// the handler's ack step calls it. Its error fails the step, and the
	// delivery then goes unacknowledged.
	Ack func() error
}

// Sender posts one send to the trial's receiver.
type Sender interface {
	Send(ctx context.Context, eventID, step, key string) (SendResult, error)
}

// SendResult is the receiver's answer to one send.
type SendResult struct {
	Step    string `json:"step"`
	Key     string `json:"key,omitempty"`
	Outcome string `json:"outcome"`
	Receipt string `json:"receipt"`
}

// Outcome is what one delivery says it did: the worker's claim, which the
// parent checks against the receiver's log and the rows.
type Outcome struct {
	// Steps is how many steps ran to the end.
	Steps int `json:"steps"`
	// StoppedAt is the 1-based step whose stop ended the handler; 0 when
	// it ran to the last step.
	StoppedAt int `json:"stopped_at,omitempty"`
	// Bound are the names the queries bound, with their values.
	Bound map[string]any `json:"bound,omitempty"`
	Sends []SendResult   `json:"sends"`
	// AckedAt is the 1-based ack step that acknowledged the delivery; 0
	// when the handler has none (its ACK is the worker's exit) or did not
	// reach it.
	AckedAt int `json:"acked_at,omitempty"`
	// FailedStep and Error are set when a step failed; the delivery is
	// then not ACKed, unless an ack step did before it.
	FailedStep int    `json:"failed_step,omitempty"`
	Error      string `json:"error,omitempty"`
	ErrorClass string `json:"error_class,omitempty"`
}

// Error classes of a failed step, so tables can count each kind.
const (
	ClassBusy       = "busy"
	ClassConstraint = "constraint"
	ClassSend       = "send"
	ClassOther      = "other"
	// ClassSerialization and ClassDeadlock are PostgreSQL's 40001 and
	// 40P01: the step lost to a concurrent transaction. The pattern
	// worker does not retry them: the delivery fails unACKed, as any
	// failed step, and the event is redelivered.
	ClassSerialization = "serialization"
	ClassDeadlock      = "deadlock"
)

// Run runs the handler once on conn. It calls pts.Hit before and after
// every step; a chosen point ends the process there, with any transaction
// left open, as a dying process leaves it. A step's error ends the
// delivery unACKed, also without a rollback: the process exits and SQLite
// rolls back on the next open.
func Run(ctx context.Context, conn *sql.Conn, dialect store.Dialect, f File, d Delivery, snd Sender, pts *protocol.Points) Outcome {
	r := runner{ctx: ctx, conn: conn, dialect: dialect, d: d, snd: snd, vals: map[string]any{
		"event_id": d.EventID, "delivery": int64(d.Number), "worker": int64(d.Worker), "now_ms": d.NowMS,
	}}
	out := Outcome{Sends: []SendResult{}}
	for i, s := range f.Handler {
		before, after := s.Points(i)
		pts.Hit(before)
		stop, err := r.step(s, &out)
		if err != nil {
			out.FailedStep, out.Error, out.ErrorClass = i+1, err.Error(), classify(dialect, err)
			return out
		}
		out.Steps = i + 1
		if s.Ack {
			out.AckedAt = i + 1
		}
		pts.Hit(after)
		if stop {
			out.StoppedAt = i + 1
			break
		}
	}
	if len(r.bound) > 0 {
		out.Bound = r.bound
	}
	return out
}

type runner struct {
	ctx     context.Context
	conn    *sql.Conn
	dialect store.Dialect
	d       Delivery
	snd     Sender
	vals    map[string]any
	bound   map[string]any
	inTx    bool
}

// step runs one step and says whether the handler stops after it.
func (r *runner) step(s Step, out *Outcome) (bool, error) {
	switch s.Kind() {
	case KindQuery:
		return r.query(s)
	case KindExec:
		q, args := r.bind(s.Exec)
		res, err := r.conn.ExecContext(r.ctx, q, args...)
		if err != nil {
			return false, fmt.Errorf("exec: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("exec: %w", err)
		}
		if s.StopUnlessChanged && n == 0 {
			return true, r.rollbackOpen()
		}
		return false, nil
	case KindBegin:
		r.inTx = true
		return false, r.exec(BeginSQL(r.dialect, s.Begin))
	case KindCommit:
		r.inTx = false
		return false, r.exec("COMMIT")
	case KindRollback:
		r.inTx = false
		return false, r.exec("ROLLBACK")
	case KindSend:
		return false, r.send(s.Send, out)
	case KindAck:
		if r.d.Ack == nil {
			return false, nil
		}
		if err := r.d.Ack(); err != nil {
			return false, fmt.Errorf("ack: %w", err)
		}
		return false, nil
	}
	return false, fmt.Errorf("step of no known kind")
}

func (r *runner) query(s Step) (bool, error) {
	q, args := r.bind(s.Query)
	rows, err := r.conn.QueryContext(r.ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("query: %w", err)
	}
	var first any
	has := rows.Next()
	if has {
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return false, fmt.Errorf("query: %w", err)
		}
		dest := make([]any, len(cols))
		for i := range dest {
			dest[i] = new(any)
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return false, fmt.Errorf("query: %w", err)
		}
		first = *(dest[0].(*any))
		if b, ok := first.([]byte); ok {
			first = string(b)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return false, fmt.Errorf("query: %w", err)
	}
	if s.As != "" {
		r.vals[s.As] = first
		if r.bound == nil {
			r.bound = map[string]any{}
		}
		r.bound[s.As] = first
	}
	if (s.StopIf == "rows" && has) || (s.StopIf == "no_rows" && !has) {
		return true, r.rollbackOpen()
	}
	return false, nil
}

// rollbackOpen ends an open transaction before a stop, as the handler's
// early return would.
func (r *runner) rollbackOpen() error {
	if !r.inTx {
		return nil
	}
	r.inTx = false
	return r.exec("ROLLBACK")
}

func (r *runner) exec(stmt string) error {
	if _, err := r.conn.ExecContext(r.ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

func (r *runner) send(s *Send, out *Outcome) error {
	key := ""
	if s.Key != "" {
		var v any
		q, args := r.bind(keySQL(s.Key))
		if err := r.conn.QueryRowContext(r.ctx, q, args...).Scan(&v); err != nil {
			return fmt.Errorf("send key: %w", err)
		}
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		key = fmt.Sprint(v)
	}
	res, err := r.snd.Send(r.ctx, r.d.EventID, s.Step, key)
	if err != nil {
		return &sendError{err}
	}
	out.Sends = append(out.Sends, res)
	return nil
}

// bind binds the parameters an SQL text names, and only those, as the
// dialect's driver takes them.
func (r *runner) bind(sqlText string) (string, []any) {
	var named []sql.NamedArg
	for _, n := range ParamNames(sqlText) {
		named = append(named, sql.Named(n, r.vals[n]))
	}
	return r.dialect.BindNamed(sqlText, named)
}

// BeginSQL is the statement a begin step runs. On SQLite "deferred" takes
// the write lock at the first write and "immediate" at the begin, so two
// immediate transactions never interleave. PostgreSQL has no database
// write lock: a transaction takes row locks as its statements touch rows,
// at the run's isolation level (--isolation), so both begin as BEGIN, and
// "immediate" serializes nothing there. The patterns topic's table says the same.
func BeginSQL(d store.Dialect, mode string) string {
	if d.Name() == store.BackendPostgres {
		return "BEGIN"
	}
	return "BEGIN " + map[string]string{"deferred": "DEFERRED", "immediate": "IMMEDIATE"}[mode]
}

type sendError struct{ err error }

func (e *sendError) Error() string { return "send: " + e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// classify names a failed step's error class: the dialect's class where
// it has one, and any broken constraint as one.
func classify(d store.Dialect, err error) string {
	var se *sendError
	var qe sqlite3.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &se):
		return ClassSend
	case sqlitedb.IsBusy(err):
		return ClassBusy
	case errors.As(err, &qe) && qe.Code == sqlite3.ErrConstraint:
		return ClassConstraint
	}
	switch d.Classify(err) {
	case store.ClassBusy:
		return ClassBusy
	case store.ClassSerialization:
		return ClassSerialization
	case store.ClassDeadlock:
		return ClassDeadlock
	case store.ClassUnique:
		return ClassConstraint
	}
	// SQLSTATE class 23 is every integrity constraint: not null, foreign
	// key, check, exclusion.
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23") {
		return ClassConstraint
	}
	return ClassOther
}
