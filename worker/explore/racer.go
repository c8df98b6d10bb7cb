// Package explore is the child side of the explore scenario's concurrent
// redelivery: a racer that opens the file, says it is ready, waits behind
// the parent's barrier, and then delivers the event like any redelivery,
// retrying when SQLite reports the file busy.
package explore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-sqlite3"

	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
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
	Settings   sqlitedb.Settings `json:"settings"`
	Attempts   int               `json:"attempts"`
	BusyErrors int               `json:"busy_errors"`
	Error      string            `json:"error,omitempty"`
	ErrorClass string            `json:"error_class,omitempty"`
}

// Classify names the kind of a delivery error.
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

// RaceMain is the registered worker "explore.race". Arguments are the
// redelivery worker's, plus -ready-fd (the inherited descriptor on which
// it writes one byte once the file is open) and -max-attempts (how often a
// busy delivery is tried before the racer gives up).
func RaceMain(call *protocol.Call) int {
	fs := flag.NewFlagSet(call.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbPath := fs.String("db", "", "database file")
	pattern := fs.String("pattern", "", "separate-commit or single-transaction")
	readyFD := fs.Int("ready-fd", 0, "descriptor to signal readiness on")
	maxAttempts := fs.Int("max-attempts", 3, "attempts before a busy delivery gives up")
	var ev wr.Event
	fs.StringVar(&ev.ID, "event-id", "", "event id")
	fs.StringVar(&ev.JobKey, "job-key", "", "job key")
	if err := fs.Parse(call.Args); err != nil {
		return call.Usage(err)
	}
	p, err := wr.ParsePattern(*pattern)
	if err != nil {
		return call.Usage(err)
	}
	if *dbPath == "" || ev.ID == "" || ev.JobKey == "" || *readyFD < 3 || *maxAttempts < 1 {
		return call.Usage(errors.New("-db, -event-id, -job-key, -ready-fd (3 or more) and -max-attempts (1 or more) are required"))
	}
	ctx := context.Background()
	db, settings, err := sqlitedb.Open(ctx, wr.Options(*dbPath))
	if err != nil {
		return call.Fail(err)
	}
	// The parent created the tables; this reads them, so the first
	// statement after the release is the delivery's own.
	if err := wr.EnsureSchema(ctx, db); err != nil {
		return call.Fail(err)
	}
	if err := waitForRelease(*readyFD, call.Stdin); err != nil {
		return call.Fail(err)
	}
	res := RaceResult{Pattern: p, Settings: settings}
	for {
		res.Attempts++
		out, err := wr.Deliver(ctx, db, p, ev, call.Points)
		if err == nil {
			res.Outcome = out
			break
		}
		class := Classify(err)
		if class == ClassBusy {
			res.BusyErrors++
			if res.Attempts < *maxAttempts {
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

// waitForRelease writes the readiness byte and blocks until the parent
// closes standard input, which releases every racer at once.
func waitForRelease(fd int, stdin io.Reader) error {
	f := os.NewFile(uintptr(fd), "ready")
	if f == nil {
		return fmt.Errorf("ready descriptor %d is not open", fd)
	}
	if _, err := f.Write([]byte{1}); err != nil {
		return fmt.Errorf("signal ready on descriptor %d: %w", fd, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close ready descriptor %d: %w", fd, err)
	}
	if stdin == nil {
		return errors.New("no standard input to wait on")
	}
	if _, err := io.Copy(io.Discard, stdin); err != nil {
		return fmt.Errorf("wait for the release: %w", err)
	}
	return nil
}
