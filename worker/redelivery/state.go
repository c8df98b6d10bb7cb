package redelivery

import (
	"context"
	"time"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Table names of the pattern.
const (
	TableJobs      = "follow_up_jobs"
	TableProcessed = "processed_events"
)

// Options returns the article's database settings for path.
func Options(path string) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: "DELETE", Synchronous: "FULL", BusyTimeout: 5 * time.Second}
}

// RequestedSQLite is what every delivering worker's connection must read
// back: the article's settings.
func RequestedSQLite() sqlitedb.Settings {
	o := Options("")
	return sqlitedb.Settings{JournalMode: o.JournalMode, Synchronous: o.Synchronous, BusyTimeoutMS: int(o.BusyTimeout.Milliseconds())}
}

// State is what the two tables hold after a delivery, as the next process
// finds them: the jobs in insertion order, the processed ids in order. A
// table the file does not hold is nil, an empty one empty, so a reader
// can tell a worker killed before it created the table.
type State struct {
	FollowUpJobs    []Event  `json:"follow_up_jobs"`
	ProcessedEvents []string `json:"processed_events"`
}

// ReadState lists both tables. Every scenario that inspects the pattern's
// file reads it here.
func ReadState(ctx context.Context, st store.Store) (State, error) {
	var s State
	jobs, err := st.ReadTable(ctx, TableJobs, "SELECT event_id, job_key FROM follow_up_jobs ORDER BY "+st.Dialect.RowOrder(), func(scan func(...any) error) error {
		var e Event
		err := scan(&e.ID, &e.JobKey)
		s.FollowUpJobs = append(s.FollowUpJobs, e)
		return err
	})
	if err != nil {
		return s, err
	}
	if jobs && s.FollowUpJobs == nil {
		s.FollowUpJobs = []Event{}
	}
	processed, err := st.ReadTable(ctx, TableProcessed, "SELECT event_id FROM processed_events ORDER BY event_id", func(scan func(...any) error) error {
		var id string
		err := scan(&id)
		s.ProcessedEvents = append(s.ProcessedEvents, id)
		return err
	})
	if processed && s.ProcessedEvents == nil {
		s.ProcessedEvents = []string{}
	}
	return s, err
}

// Lines renders the state as explore and durability record a file's
// tables: each row one string, columns joined by "|", a missing table as
// an empty one.
func (s State) Lines() map[string][]string {
	out := map[string][]string{TableJobs: {}, TableProcessed: {}}
	for _, e := range s.FollowUpJobs {
		out[TableJobs] = append(out[TableJobs], e.ID+"|"+e.JobKey)
	}
	out[TableProcessed] = append(out[TableProcessed], s.ProcessedEvents...)
	return out
}
