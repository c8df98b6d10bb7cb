package batch

import (
	"idemlab/experiments/receiver"
	wb "idemlab/worker/batch"
	"idemlab/worker/wire"
)

// Observation is one line of observations.jsonl: one worker process and
// what the parent witnessed around it.
type Observation struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Trial     int    `json:"trial"`
	// Step is "run N" or "resolve job:item:step".
	Step      string `json:"step"`
	ProcessID int    `json:"process_id"`
	// Receiver is the trial's receiver URL and DB its journal file; both
	// appear in the process's command line. DB is empty for conditions
	// without a journal.
	Receiver string `json:"receiver"`
	// Sender is a run's sender token (RunSender), which the parent put
	// in the receiver URL it gave the run and the receiver logs with each
	// of its sends; empty for a resolve, and in folders of format 4 and
	// older.
	Sender string `json:"sender,omitempty"`
	DB     string `json:"db"`
	// Sends are the receiver's log entries since the previous observation:
	// the trial's log in order, cut where the parent read it. A send is
	// its sender's, whichever observation it falls in.
	Sends []receiver.Entry `json:"sends"`
	// Journal is every row of the file as the parent read it after the
	// process exited; absent for conditions without a journal.
	Journal []wb.JournalRow `json:"journal,omitempty"`
	// Lookup is what the parent found at the receiver before a resolve.
	Lookup *wb.Lookup `json:"lookup,omitempty"`
}

// runArgs is a run's command line for action a of a condition of st: the
// parent starts the run with it and the fold rebuilds it from the
// observation to check the recorded one. db is used in journal mode only.
func runArgs(st Settings, a Action, db, receiver string) wb.RunArgs {
	r := wb.RunArgs{
		Mode: a.Mode, Job: a.Job, Items: st.Items, Receiver: receiver,
		ValidateMS: st.LatencyMS.Validate, TransformMS: st.LatencyMS.Transform,
		Verify: a.Verify, IdempotencyKey: a.IdempotencyKey, Backend: st.Backend,
	}
	if a.Mode == wb.ModeJournal {
		r.DB = db
	}
	if a.ChangeItem {
		r.ChangeItem = st.FailAt
	}
	return r
}

// resolveArgs is a resolve's command line for the send k the parent
// looked up (lk) in journal db: the parent starts the resolve with it and
// the fold rebuilds it, as runArgs.
func resolveArgs(st Settings, lk wb.Lookup, db string, k wire.Key) wb.ResolveArgs {
	a := lk.Resolve(db, k)
	a.Backend = st.Backend
	return a
}
