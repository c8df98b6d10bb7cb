package durability

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	wb "idemlab/worker/batch"
	wc "idemlab/worker/claim"
	we "idemlab/worker/explore"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// This file is where the matrix meets its workers: their command lines and
// the rows the parent reads from their files.

// RedeliveryArgs are a delivery's worker arguments.
func RedeliveryArgs(s Settings, c Condition, db string) wr.Args {
	p := wr.SeparateCommit
	if c.Pattern == PatternSingle {
		p = wr.SingleTransaction
	}
	return wr.Args{DB: db, Pattern: p, Event: wr.Event{ID: s.EventID, JobKey: s.JobKey}, Backend: s.Backend}
}

// BatchIdempotencyKey is whether the batch runs attach an Idempotency-Key
// to their sends. They do not, as the article's batch does not, so a
// send the resume makes again, its IN_FLIGHT mark lost, is accepted a
// second time by the receiver rather than replayed; the model
// (afterTags) reads the same constant.
const BatchIdempotencyKey = false

// BatchArgs is a batch run's command line after the worker name: the
// journal, no latency, no verification, as the batch scenario's resume.
func BatchArgs(s Settings, db, receiver string) []string {
	return wb.RunArgs{Mode: wb.ModeJournal, Job: s.JobID, Items: s.Items, Receiver: receiver, DB: db,
		IdempotencyKey: BatchIdempotencyKey, Backend: s.Backend}.Argv()
}

// StepArgs is the worker and command line of a trial's process in role;
// the run and the fold both build them so. A resolve's are built from its
// lookup instead.
func StepArgs(s Settings, c Condition, role, db, receiver string) (string, []string) {
	switch c.Pattern {
	case PatternBatch:
		return wb.WorkerRun, BatchArgs(s, db, receiver)
	case PatternClaim:
		return we.ClaimName, ClaimArgs(s, db, claimHolders[role]).Argv()
	}
	return wr.WorkerName, RedeliveryArgs(s, c, db).Argv()
}

// ProcessArgs is the worker and command line of one step of trial o: the
// run starts the process with them and the fold checks its argv against
// them.
func ProcessArgs(s Settings, c Condition, o Observation, step Step) (string, []string) {
	if c.Pattern == PatternBatch && step.Role == RoleResolve && step.Lookup != nil {
		return wb.WorkerResolve, ResolveArgs(s, o.DB, *step.Lookup).Argv()
	}
	db := o.DB
	if step.Role == RoleFirst && o.FS != nil {
		db = filepath.Join(o.FS.Mount, filepath.Base(o.DB))
	}
	return StepArgs(s, c, step.Role, db, o.Receiver)
}

// ResolveArgs is the command line of the resolve that lookup lk calls
// for; the run and the fold both build it so.
func ResolveArgs(s Settings, db string, lk wb.Lookup) wb.ResolveArgs {
	k := wire.Key{Job: s.JobID}
	k.Item, k.Step, _ = strings.Cut(strings.TrimPrefix(lk.Key, s.JobID+":"), ":")
	a := lk.Resolve(db, k)
	a.Backend = s.Backend
	return a
}

// journalRows renders the batch worker's journal, read by its own reader,
// as Rows hold it: "job|item|step|status|receipt" in key order.
func journalRows(ctx context.Context, st store.Store) ([]string, error) {
	rows, err := wb.ReadJournal(ctx, st)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, r := range rows {
		out = append(out, strings.Join([]string{r.Job, r.Item, r.Step, r.Status, r.Receipt}, "|"))
	}
	return out, nil
}

// Tables lists the tables a pattern's rows hold.
func Tables(pattern string) []string {
	switch pattern {
	case PatternBatch:
		return []string{TableJournal}
	case PatternClaim:
		return []string{TableClaims}
	}
	return []string{TableJobs, TableProcessed}
}

// readRows reads every table of a pattern through the reader of the
// worker that writes it, on either backend.
func readRows(ctx context.Context, pattern string, st store.Store) (Rows, error) {
	switch pattern {
	case PatternClaim:
		c, err := wc.ReadClaims(ctx, st)
		if err != nil {
			return nil, err
		}
		return Rows(c.Lines()), nil
	case PatternBatch:
		j, err := journalRows(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", TableJournal, err)
		}
		return Rows{TableJournal: j}, nil
	}
	s, err := wr.ReadState(ctx, st)
	if err != nil {
		return nil, err
	}
	return Rows(s.Lines()), nil
}

// ServerSchema is the DDL of a pattern's tables on PostgreSQL, which the
// parent makes and flushes before a trial's first process.
func ServerSchema(pattern string) (string, error) {
	switch pattern {
	case PatternBatch:
		return wb.SchemaOn(store.Postgres{}), nil
	case PatternClaim:
		return wc.DDL(wc.SchemaNew)
	}
	return wr.Schema, nil
}
