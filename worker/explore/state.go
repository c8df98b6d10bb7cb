package explore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"idemlab/worker/store"
)

// Tables the leased worker writes.
const (
	TableLease        = "job_lease"
	TableLeaseJournal = "lease_journal"
	TableLeaseLog     = "lease_log"
)

// Lease is a job_lease row.
type Lease struct {
	Job, Holder           string
	Generation, ClaimedAt int64
}

// JournalRow is a lease_journal row without its receipt.
type JournalRow struct {
	Job, Item, Step, Status string
	Generation              int64
}

// LogEntry is a lease_log row: a grant or a journal write, by whom, under
// which generation, at which time of the writer's clock.
type LogEntry struct {
	Seq                              int
	Kind, Holder, Item, Step, Status string
	Gen, AtMS                        int64
}

// LeaseState is what the leased worker's file holds. A table the file does
// not hold is nil, as a worker killed before it created the tables leaves
// it.
type LeaseState struct {
	Leases  []Lease
	Journal []JournalRow
	Log     []LogEntry
}

// ReadLease lists the three tables: the lease by job, the journal by item
// and step, the log in order.
func ReadLease(ctx context.Context, st store.Store) (LeaseState, error) {
	var s LeaseState
	reads := []struct {
		table, query string
		row          func(scan func(...any) error) error
	}{
		{TableLease, "SELECT job_id, holder, generation, claimed_at FROM job_lease ORDER BY job_id", func(scan func(...any) error) error {
			var l Lease
			err := scan(&l.Job, &l.Holder, &l.Generation, &l.ClaimedAt)
			s.Leases = append(s.Leases, l)
			return err
		}},
		{TableLeaseJournal, "SELECT job_id, item_id, step_name, status, generation FROM lease_journal ORDER BY item_id, step_name", func(scan func(...any) error) error {
			var j JournalRow
			err := scan(&j.Job, &j.Item, &j.Step, &j.Status, &j.Generation)
			s.Journal = append(s.Journal, j)
			return err
		}},
		{TableLeaseLog, "SELECT seq, kind, holder, generation, item_id, step_name, status, at_ms FROM lease_log ORDER BY seq", func(scan func(...any) error) error {
			var e LogEntry
			err := scan(&e.Seq, &e.Kind, &e.Holder, &e.Gen, &e.Item, &e.Step, &e.Status, &e.AtMS)
			s.Log = append(s.Log, e)
			return err
		}},
	}
	for _, r := range reads {
		ok, err := st.ReadTable(ctx, r.table, r.query, r.row)
		if err != nil {
			return s, err
		}
		if ok {
			s.ensure(r.table)
		}
	}
	return s, nil
}

// ensure makes an existing table's rows non-nil.
func (s *LeaseState) ensure(table string) {
	switch {
	case table == TableLease && s.Leases == nil:
		s.Leases = []Lease{}
	case table == TableLeaseJournal && s.Journal == nil:
		s.Journal = []JournalRow{}
	case table == TableLeaseLog && s.Log == nil:
		s.Log = []LogEntry{}
	}
}

// Lines renders the state as explore records a file's tables: each row
// one string, columns joined by "|", a missing table as an empty one.
func (s LeaseState) Lines() map[string][]string {
	out := map[string][]string{TableLease: {}, TableLeaseJournal: {}, TableLeaseLog: {}}
	for _, l := range s.Leases {
		out[TableLease] = append(out[TableLease], join(l.Holder, l.Generation, l.ClaimedAt))
	}
	for _, j := range s.Journal {
		out[TableLeaseJournal] = append(out[TableLeaseJournal], join(j.Item, j.Step, j.Status, j.Generation))
	}
	for _, e := range s.Log {
		out[TableLeaseLog] = append(out[TableLeaseLog], e.Line())
	}
	return out
}

// Line renders the entry as explore records it.
func (e LogEntry) Line() string {
	return join(e.Seq, e.Kind, e.Holder, e.Gen, e.Item, e.Step, e.Status, e.AtMS)
}

// ParseLogLine reads a recorded Line back; ok is false when it does not
// have the eight cells. It is lenient about numbers, as explore's reading
// always was: a cell that is not one reads as 0, and the checks over the
// log then find the entry out of place.
func ParseLogLine(s string) (LogEntry, bool) {
	f := strings.Split(s, "|")
	if len(f) != 8 {
		return LogEntry{}, false
	}
	seq, _ := strconv.Atoi(f[0])
	gen, _ := strconv.ParseInt(f[3], 10, 64)
	at, _ := strconv.ParseInt(f[7], 10, 64)
	return LogEntry{Seq: seq, Kind: f[1], Holder: f[2], Gen: gen, Item: f[4], Step: f[5], Status: f[6], AtMS: at}, true
}

func join(cells ...any) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	return strings.Join(parts, "|")
}
