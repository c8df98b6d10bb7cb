// Package builtin holds the built-in subjects explore runs: the
// hand-written redelivery workers (separate commit, single transaction),
// article 002's batch in its two modes against the receiver, article
// 003's TTL claim with its probe inside the TTL, and the lease that
// combines them. Each is a subject.Subject built from its worker's own
// model: the points it passes, the state a crash leaves, the outcomes
// it may end in.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"idemlab/experiments/subject"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Table names of the redelivery subjects.
const (
	TableJobs      = wr.TableJobs
	TableProcessed = wr.TableProcessed
)

// Duplicate names the outcome with n jobs and one processed record.
func Duplicate(n int) string { return "duplicate-" + strconv.Itoa(n) }

// lister is a worker's tables as its reader returns them, which renders
// them as subject.State records them.
type lister interface{ Lines() map[string][]string }

// readWith reads a subject's file, opened with o, through the reader of
// the worker that writes it. A file that does not exist is not created: it
// reads as the reader's tables, empty.
func readWith[T lister](ctx context.Context, path string, o sqlitedb.Options, read func(context.Context, store.Store) (T, error)) (subject.State, error) {
	var none T
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return subject.State(none.Lines()), nil
	}
	st, err := store.OpenSQLite(ctx, o)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	v, err := read(ctx, st)
	if err != nil {
		return nil, err
	}
	return subject.State(v.Lines()), nil
}

// oneRow says a table holds exactly one row after the recovery.
func oneRow(table, what string) func(subject.History) []string {
	return func(h subject.History) []string {
		last, ok := h.Final()
		if !ok {
			return []string{"no steps"}
		}
		if n := len(last.Rows[table]); n != 1 {
			return []string{fmt.Sprintf("%d %ss after the recovery, want exactly 1", n, what)}
		}
		return nil
	}
}

// recoveryAcknowledged says the last step, a fresh process, finished and
// acknowledged: a subject that cannot recover is stuck, not idempotent.
func recoveryAcknowledged(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	if last.Role != subject.RoleRecovery {
		return []string{fmt.Sprintf("the last step is a %s, not a recovery", last.Role)}
	}
	if last.Signal != "" || last.ExitCode != protocol.ExitACK {
		return []string{fmt.Sprintf("the recovery exited %d (signal %q), want 0", last.ExitCode, last.Signal)}
	}
	return nil
}

// ackLeavesWorkDone says an acknowledged step left a job and a processed
// record behind: once a delivery is acknowledged the broker forgets it,
// so work missing then is lost for good.
func ackLeavesWorkDone(h subject.History) []string {
	var out []string
	for i, s := range h.Steps {
		if s.Signal != "" || s.ExitCode != protocol.ExitACK {
			continue
		}
		if len(s.Rows[TableJobs]) == 0 || len(s.Rows[TableProcessed]) == 0 {
			out = append(out, fmt.Sprintf("step %d (%s) acknowledged, but the file then held %d jobs and %d processed records", i+1, s.Role, len(s.Rows[TableJobs]), len(s.Rows[TableProcessed])))
		}
	}
	return out
}
