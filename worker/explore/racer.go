// Package explore is the child side of the explore scenario's concurrent
// redelivery: a racer that opens the file, says it is ready, waits behind
// the parent's barrier, and then delivers the event like any redelivery,
// retrying when SQLite reports the file busy.
package explore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/mattn/go-sqlite3"

	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// RacerName is the registry name of the racing worker.
const RacerName = "explore.race"

// Error classes a racer reports, so the parent can count each kind of
// failed delivery without parsing SQLite's messages.
const (
	// ClassBusy is SQLITE_BUSY or SQLITE_LOCKED on the last attempt.
	ClassBusy = "busy"
	// ClassConstraint is a constraint failure: under separate commits, a
	// racer that lost the check-then-act race fails to insert the
	// processed record another racer already committed.
	ClassConstraint = "constraint"
	// ClassOther is any other error.
	ClassOther = "other"
)

// RaceResult is the racer's report payload. A racer that failed still
// reports it, with Error set, and exits ExitWorkerError.
type RaceResult struct {
	Pattern    wr.Pattern        `json:"pattern"`
	Outcome    wr.Outcome        `json:"outcome"`
	Settings   sqlitedb.Settings `json:"settings,omitzero"`
	Attempts   int               `json:"attempts"`
	BusyErrors int               `json:"busy_errors"`
	Error      string            `json:"error,omitempty"`
	ErrorClass string            `json:"error_class,omitempty"`
	// Postgres is what the session read back on PostgreSQL, and
	// SerializationErrors the attempts that met 40001 or 40P01, each of
	// which was run again while attempts were left.
	Postgres            *store.PGSettings `json:"postgres,omitempty"`
	SerializationErrors int               `json:"serialization_errors,omitempty"`
}

// RaceArgs are the racer's arguments: the delivering worker's, the
// descriptor it says ready on (3 or more), and how often a busy delivery
// is tried before it gives up.
type RaceArgs struct {
	Delivery    wr.Args
	ReadyFD     int
	MaxAttempts int
}

// Argv is the command line after the worker name: the delivering
// worker's, then the racer's own.
func (a RaceArgs) Argv() []string {
	return append(a.Delivery.Argv(), "-ready-fd", strconv.Itoa(a.ReadyFD), "-max-attempts", strconv.Itoa(a.MaxAttempts))
}

// ParseRaceArgs reads the command line Argv renders.
func ParseRaceArgs(argv []string) (RaceArgs, error) {
	var a RaceArgs
	fs := newFlagSet(RacerName)
	check := a.Delivery.Bind(fs)
	fs.IntVar(&a.ReadyFD, "ready-fd", 0, "descriptor to signal readiness on")
	fs.IntVar(&a.MaxAttempts, "max-attempts", 3, "attempts before a busy delivery gives up")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := check(); err != nil {
		return a, err
	}
	if a.ReadyFD < 3 || a.MaxAttempts < 1 {
		return a, errors.New("-ready-fd (3 or more) and -max-attempts (1 or more) are required")
	}
	return a, nil
}

// Classify names the kind of a delivery error on SQLite.
func Classify(err error) string {
	if sqlitedb.IsBusy(err) {
		return ClassBusy
	}
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrConstraint {
		return ClassConstraint
	}
	return ClassOther
}

// ClassSerialization is PostgreSQL's 40001 or 40P01 on the last attempt.
const ClassSerialization = "serialization"

// classifyOn names the kind of a delivery error on the store's backend:
// SQLite's classes as Classify gives them, and on PostgreSQL its unique
// violation as a constraint failure and 40001 and 40P01 as serialization.
func classifyOn(d store.Dialect, err error) string {
	switch d.Classify(err) {
	case store.ClassSerialization, store.ClassDeadlock:
		return ClassSerialization
	case store.ClassUnique:
		return ClassConstraint
	case store.ClassBusy:
		return ClassBusy
	}
	return Classify(err)
}

// RaceMain is the registered worker "explore.race". It writes one byte on
// the inherited descriptor -ready-fd once the file is open, waits for the
// release, and delivers, up to -max-attempts times while the file is busy.
func RaceMain(call *protocol.Call) int {
	a, err := ParseRaceArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	p, ev := a.Delivery.Pattern, a.Delivery.Event
	ctx := context.Background()
	db, rb, err := store.Open(ctx, a.Delivery.Backend, a.Delivery.DB, wr.Options(a.Delivery.DB))
	if err != nil {
		return call.Fail(err)
	}
	// The parent created the tables; this reads them, so the first
	// statement after the release is the delivery's own.
	if err := wr.EnsureSchema(ctx, db.DB); err != nil {
		return call.Fail(err)
	}
	if err := protocol.AwaitRelease(a.ReadyFD, call.Stdin); err != nil {
		return call.Fail(err)
	}
	res := RaceResult{Pattern: p, Postgres: rb.Postgres}
	if rb.SQLite != nil {
		res.Settings = *rb.SQLite
	}
	for {
		res.Attempts++
		out, err := wr.DeliverOn(ctx, db, p, ev, call.Points)
		if err == nil {
			res.Outcome = out
			break
		}
		class := classifyOn(db.Dialect, err)
		if class == ClassBusy || class == ClassSerialization {
			if class == ClassBusy {
				res.BusyErrors++
			} else {
				res.SerializationErrors++
			}
			if res.Attempts < a.MaxAttempts {
				continue
			}
		}
		res.Outcome, res.Error, res.ErrorClass = out, err.Error(), class
		// Exit without closing, as a failed process would; the parent
		// reads the file afterwards.
		return call.Finish(res, protocol.ExitWorkerError)
	}
	if err := db.Close(); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	return call.Finish(res, protocol.ExitACK)
}
