package durability

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"idemlab/experiments/subject"
	"idemlab/experiments/subject/builtin"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// This file is where the matrix meets its workers. Each pattern is run by
// a built-in subject (subject/builtin), as explore runs it: the subject's
// model announces the points, its arguments start the processes and its
// reader lists the tables. What stays here is durability's: a claim
// trial's holders and the batch journal's rows with their job.

// subjectOf is the built-in subject whose worker runs pattern; ok is false
// for a pattern durability does not run.
func subjectOf(pattern string) (subject.Subject, bool) {
	switch pattern {
	case PatternSeparate:
		return builtin.Redelivery(wr.SeparateCommit), true
	case PatternSingle:
		return builtin.Redelivery(wr.SingleTransaction), true
	case PatternClaim:
		return builtin.Claim(), true
	case PatternBatch:
		return builtin.Batch(wb.ModeJournal), true
	}
	return subject.Subject{}, false
}

// params are what pattern's subject reads of the settings; the batch
// subject's job is the run's JobID.
func (s Settings) params(pattern string) subject.Params {
	p := subject.Params{EventID: s.EventID, JobKey: s.JobKey, Items: s.Items, Backend: s.Backend}
	if pattern == PatternBatch {
		p.JobKey = s.JobID
	}
	return p
}

// Points lists a pattern's crash points as its subject's model passes
// them; the run discovers them from a normal run's report and the fold
// checks the two agree.
func Points(pattern string, items int) []string {
	sub, ok := subjectOf(pattern)
	if !ok {
		return nil
	}
	return sub.Points(subject.Params{Items: items})
}

// StepArgs is the worker and command line of a trial's process in role;
// the run and the fold both build them so. A resolve's are built from its
// lookup instead.
func StepArgs(s Settings, c Condition, role, db, receiver string) (string, []string) {
	p, f := s.params(c.Pattern), subject.Files{DB: db, Receiver: receiver}
	if c.Pattern == PatternClaim {
		var off int64
		if role == RoleReclaim {
			off = ClaimTTLMS + 1
		}
		return we.ClaimName, builtin.ClaimArgs(p, f, claimHolders[role], off).Argv()
	}
	sub, _ := subjectOf(c.Pattern)
	return sub.Worker, sub.Args(p, f)
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

// readRows reads every table of a pattern through its subject's reader,
// on either backend; the batch journal's rows keep their job
// ("job|item|step|status|receipt", in key order).
func readRows(ctx context.Context, pattern string, st store.Store) (Rows, error) {
	if pattern == PatternBatch {
		rows, err := wb.ReadJournal(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", TableJournal, err)
		}
		out := []string{}
		for _, r := range rows {
			out = append(out, strings.Join([]string{r.Job, r.Item, r.Step, r.Status, r.Receipt}, "|"))
		}
		return Rows{TableJournal: out}, nil
	}
	sub, _ := subjectOf(pattern)
	s, err := sub.ReadOn(ctx, st)
	return Rows(s), err
}

// Schema is the DDL of a pattern's tables in dialect d, which the parent
// makes before a trial's first process: in the trial's file on SQLite,
// made and flushed in its schema on PostgreSQL.
func Schema(pattern string, d store.Dialect) (string, error) {
	sub, ok := subjectOf(pattern)
	if !ok {
		return "", fmt.Errorf("pattern %q has no subject", pattern)
	}
	return sub.Tables(d), nil
}
