package batch

import (
	"context"
	"database/sql"
	"fmt"

	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// JournalRow is one step_journal row, column for column, as a reader
// outside the worker sees it: the parent records these rows and folds
// them.
type JournalRow struct {
	Job       string  `json:"job_id"`
	Item      string  `json:"item_id"`
	Step      string  `json:"step_name"`
	Status    string  `json:"status"`
	Digest    string  `json:"payload_digest"`
	Receipt   string  `json:"receipt,omitempty"`
	ErrorType string  `json:"error_type,omitempty"`
	UpdatedAt float64 `json:"updated_at"`
}

// Key is the row's primary key.
func (r JournalRow) Key() wire.Key { return wire.Key{Job: r.Job, Item: r.Item, Step: r.Step} }

// ReadJournal lists every row of step_journal in key order. A NULL receipt
// or error_type reads as empty. A file without the table, which a run that
// died before it made its schema leaves, has no rows: what such a run did
// is the fold's to judge, not a fault of the parent's read.
func ReadJournal(ctx context.Context, st store.Store) ([]JournalRow, error) {
	rows := []JournalRow{}
	_, err := st.ReadTable(ctx, "step_journal", `SELECT job_id, item_id, step_name, status, payload_digest, receipt, error_type, updated_at
FROM step_journal ORDER BY job_id, item_id, step_name`, func(scan func(dest ...any) error) error {
		var r JournalRow
		var receipt, errType sql.NullString
		if err := scan(&r.Job, &r.Item, &r.Step, &r.Status, &r.Digest, &receipt, &errType, &r.UpdatedAt); err != nil {
			return err
		}
		r.Receipt, r.ErrorType = receipt.String, errType.String
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return rows, nil
}

// HeldSends lists, in the rows' order, the side-effect rows of job that
// are not SUCCEEDED: the sends whose fate is unknown, which a person
// resolves after asking the receiver. Every scenario that resolves finds
// its sends here.
func HeldSends(rows []JournalRow, job string) []wire.Key {
	var out []wire.Key
	for _, r := range rows {
		if r.Job == job && IsSideEffect(r.Step) && r.Status != string(Succeeded) {
			out = append(out, r.Key())
		}
	}
	return out
}

// JournalAt is the model of the rows a journal run over n fresh items of
// job leaves when it stops at crash point at, or runs to its end (at ""):
// Run marks each step IN_FLIGHT before it runs it and SUCCEEDED after, and
// both of an item's points lie inside its send, so every step before the
// point's is SUCCEEDED and the point's own is IN_FLIGHT. The rows are in
// run order, with status only.
func JournalAt(job string, n int, at string) []JournalRow {
	var out []JournalRow
	for _, it := range Items(n, 0) {
		for _, step := range Steps {
			r := JournalRow{Job: job, Item: it.ID, Step: step, Status: string(Succeeded)}
			if IsSideEffect(step) && (at == ItemPoint(PointBeforeSend, it.ID) || at == ItemPoint(PointAfterSendAccepted, it.ID)) {
				r.Status = string(InFlight)
				return append(out, r)
			}
			out = append(out, r)
		}
	}
	return out
}
