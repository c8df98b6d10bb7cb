package durability

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"idemlab/experiments/batch"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// This file is where the matrix meets its workers: their command lines and
// the rows the parent reads from their files.

// RedeliveryArgs is a delivery's command line after the worker name.
func RedeliveryArgs(s Settings, c Condition, db string) []string {
	p := wr.SeparateCommit
	if c.Pattern == PatternSingle {
		p = wr.SingleTransaction
	}
	return []string{"-db", db, "-pattern", string(p), "-event-id", s.EventID, "-job-key", s.JobKey}
}

// BatchArgs is a batch run's command line after the worker name: the
// journal, no latency, no verification, as the batch scenario's resume.
func BatchArgs(s Settings, db, receiver string) []string {
	return []string{"-mode", wb.ModeJournal, "-job", s.JobID, "-items", strconv.Itoa(s.Items), "-receiver", receiver,
		"-validate-ms", "0", "-transform-ms", "0", "-db", db}
}

// StepArgs is the worker and command line of a trial's process in role;
// the run and the fold both build them so. A resolve's are built from its
// lookup instead.
func StepArgs(s Settings, c Condition, role, db, receiver string) (string, []string) {
	switch c.Pattern {
	case PatternBatch:
		return wb.WorkerRun, BatchArgs(s, db, receiver)
	case PatternClaim:
		return we.ClaimName, ClaimArgs(s, db, claimHolders[role])
	}
	return wr.WorkerName, RedeliveryArgs(s, c, db)
}

// ProcessArgs is the worker and command line of one step of trial o: the
// run starts the process with them and the fold checks its argv against
// them.
func ProcessArgs(s Settings, c Condition, o Observation, step Step) (string, []string) {
	if c.Pattern == PatternBatch && step.Role == RoleResolve && step.Lookup != nil {
		k := wb.Key{Job: s.JobID}
		k.Item, k.Step, _ = strings.Cut(strings.TrimPrefix(step.Lookup.Key, s.JobID+":"), ":")
		return wb.WorkerResolve, batch.ResolveArgs(o.DB, k, step.Lookup.Found, step.Lookup.Receipt)
	}
	return StepArgs(s, c, step.Role, o.DB, o.Receiver)
}

// HeldKeys lists the notify rows of job that are not SUCCEEDED, from the
// rendered journal rows: the sends a person resolves.
func HeldKeys(rows Rows, job string) []wb.Key {
	var out []wb.Key
	for _, r := range rows[TableJournal] {
		f := strings.Split(r, "|")
		if len(f) >= 4 && f[0] == job && wb.IsSideEffect(f[2]) && f[3] != string(wb.Succeeded) {
			out = append(out, wb.Key{Job: f[0], Item: f[1], Step: f[2]})
		}
	}
	return out
}

var queries = map[string]string{
	TableJobs:      "SELECT event_id || '|' || job_key FROM follow_up_jobs ORDER BY rowid",
	TableProcessed: "SELECT event_id FROM processed_events ORDER BY event_id",
	TableJournal:   "SELECT job_id || '|' || item_id || '|' || step_name || '|' || status || '|' || coalesce(receipt, '') FROM step_journal ORDER BY job_id, item_id, step_name",
	TableClaims:    claimQuery,
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

// read opens the trial's file inside dir as the next process would, which
// rolls back a hot journal or replays a WAL, and reads every row.
func (t *trial) read(dir string, integrity bool) (Rows, []string, error) {
	db, _, err := sqlitedb.Open(t.ctx, DBOptions(t.c, filepath.Join(dir, filepath.Base(t.db))))
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	var check []string
	if integrity {
		rs, err := db.QueryContext(t.ctx, "PRAGMA integrity_check")
		if err != nil {
			return nil, nil, fmt.Errorf("integrity_check: %w", err)
		}
		for rs.Next() {
			var s string
			if err := rs.Scan(&s); err != nil {
				rs.Close()
				return nil, nil, fmt.Errorf("integrity_check: %w", err)
			}
			check = append(check, s)
		}
		rs.Close()
	}
	rows := Rows{}
	for _, tb := range Tables(t.c.Pattern) {
		rows[tb] = []string{}
		rs, err := db.QueryContext(t.ctx, queries[tb])
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", tb, err)
		}
		for rs.Next() {
			var s string
			if err := rs.Scan(&s); err != nil {
				rs.Close()
				return nil, nil, fmt.Errorf("read %s: %w", tb, err)
			}
			rows[tb] = append(rows[tb], s)
		}
		if err := rs.Close(); err != nil {
			return nil, nil, err
		}
	}
	return rows, check, db.Close()
}
