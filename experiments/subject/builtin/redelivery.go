package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/subject"
	we "idemlab/worker/explore"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Redelivery is an article pattern's hand-written worker (separate commit
// or single transaction) as explore ran it up to format 6. A run on SQLite
// runs the patterns from their files; these stay to fold the folders of
// format 6 or older that recorded them, and for explore's races on
// PostgreSQL, which race these workers still. Its recovery is one more
// delivery, whatever the crash left.
func Redelivery(p wr.Pattern) subject.Subject {
	pat := subject.Subject{
		Name:       string(p),
		Worker:     wr.WorkerName,
		Racer:      we.RacerName,
		TrialShare: 100,
		Points:     func(subject.Params) []string { return wr.PointsOf(p) },
		Args:       func(st subject.Params, f subject.Files) []string { return deliveryArgs(st, p, f.DB).Argv() },
		RacerArgs: func(st subject.Params, f subject.Files) []string {
			return we.RaceArgs{Delivery: deliveryArgs(st, p, f.DB), ReadyFD: harness.BarrierReadyFD, MaxAttempts: st.MaxAttempts}.Argv()
		},
		RacesOnPostgres: true,
		Tables:          func(store.Dialect) string { return wr.Schema },
		ReadOn: func(ctx context.Context, st store.Store) (subject.State, error) {
			s, err := wr.ReadState(ctx, st)
			return subject.State(s.Lines()), err
		},
		Prepare: func(ctx context.Context, db string) error {
			h, _, err := sqlitedb.Open(ctx, wr.Options(db))
			if err != nil {
				return err
			}
			if err := wr.EnsureSchema(ctx, h); err != nil {
				h.Close()
				return err
			}
			return h.Close()
		},
		Read:      readRedelivery,
		CheckRows: checkRedeliveryRows,
		Classify:  func(_ subject.Params, s subject.State) string { return classifyRedelivery(s) },
		Invariants: []subject.Invariant{
			{Name: "one-job", Check: oneRow(TableJobs, "job")},
			{Name: "one-processed-record", Check: oneRow(TableProcessed, "processed record")},
			{Name: "recovery-acknowledged", Check: recoveryAcknowledged},
			{Name: "ack-leaves-work-done", Check: ackLeavesWorkDone},
		},
		Model: func(subject.Params) []string { return modelOutcomes(p) },
		Account: func(st subject.Params, _, _ string, raw json.RawMessage, before, after subject.State) []string {
			var r wr.Result
			if err := results.DecodeStrict(raw, &r); err != nil {
				return []string{fmt.Sprintf("the report's result: %v", err)}
			}
			var out []string
			if r.Pattern != p {
				out = append(out, fmt.Sprintf("the worker says it ran %s, the pattern is %s", r.Pattern, p))
			}
			if r.Settings != st.SQLite {
				out = append(out, fmt.Sprintf("the worker read back %s, the settings require %s", results.Compact(r.Settings), results.Compact(st.SQLite)))
			}
			added := len(after[TableJobs]) - len(before[TableJobs])
			if r.Outcome.JobInserted != (added == 1) || added < 0 || added > 1 {
				out = append(out, fmt.Sprintf("the worker says it added the job: %v, but the file went from %d to %d jobs", r.Outcome.JobInserted, len(before[TableJobs]), len(after[TableJobs])))
			}
			if r.Outcome.AlreadyProcessed != (len(before[TableProcessed]) > 0) {
				out = append(out, fmt.Sprintf("the worker says it found the event processed: %v, but the file held %d processed records before it ran", r.Outcome.AlreadyProcessed, len(before[TableProcessed])))
			}
			return out
		},
		Claim: func(raw json.RawMessage, racer bool) (subject.Claim, error) {
			if racer {
				var r we.RaceResult
				if err := results.DecodeStrict(raw, &r); err != nil {
					return subject.Claim{}, err
				}
				if r.Pattern != p {
					return subject.Claim{}, fmt.Errorf("the racer says it ran %s, the pattern is %s", r.Pattern, p)
				}
				return subject.Claim{WorkAdded: r.Outcome.JobInserted, FoundDone: r.Outcome.AlreadyProcessed, Settings: r.Settings, Postgres: r.Postgres,
					Attempts: r.Attempts, BusyErrors: r.BusyErrors, SerializationErrors: r.SerializationErrors, Error: r.Error, ErrorClass: r.ErrorClass}, nil
			}
			var r wr.Result
			if err := results.DecodeStrict(raw, &r); err != nil {
				return subject.Claim{}, err
			}
			if r.Pattern != p {
				return subject.Claim{}, fmt.Errorf("the worker says it ran %s, the pattern is %s", r.Pattern, p)
			}
			return subject.Claim{WorkAdded: r.Outcome.JobInserted, FoundDone: r.Outcome.AlreadyProcessed, Settings: r.Settings}, nil
		},
		RaceAllowed: func(_ subject.Params, k int) []string { return raceAllowed(p, k) },
	}
	if p == wr.SeparateCommit {
		pat.Window = subject.Window{From: wr.PointAfterJobCommit, To: wr.PointAfterProcessedCommit}
	}
	return pat
}

// deliveryArgs are the delivering worker's arguments for one delivery of
// the settings' event with pattern p.
func deliveryArgs(st subject.Params, p wr.Pattern, db string) wr.Args {
	return wr.Args{DB: db, Pattern: p, Event: wr.Event{ID: st.EventID, JobKey: st.JobKey}, Backend: st.Backend}
}

// checkRedeliveryRows says which rows of the two tables cannot have come
// from delivering the settings' one event.
func checkRedeliveryRows(st subject.Params, s subject.State) []string {
	var bad []string
	for _, t := range []string{TableJobs, TableProcessed} {
		if _, ok := s[t]; !ok {
			bad = append(bad, fmt.Sprintf("table %s is missing; both are listed, empty or not", t))
		}
	}
	for i, r := range s[TableJobs] {
		if r != jobRow(st.EventID, st.JobKey) {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, but the only event delivered is %q", TableJobs, i, r, jobRow(st.EventID, st.JobKey)))
		}
	}
	for i, r := range s[TableProcessed] {
		if r != st.EventID {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, but the only event delivered is %q", TableProcessed, i, r, st.EventID))
		}
	}
	for t := range s {
		if t != TableJobs && t != TableProcessed {
			bad = append(bad, fmt.Sprintf("table %s is not a table of the pattern", t))
		}
	}
	return bad
}

// raceAllowed is the outcomes after k racers on one event and a recovery:
// a single transaction lets one win; separate commits let every racer
// pass the check before any commits its processed record, so 1 to k jobs.
func raceAllowed(p wr.Pattern, k int) []string {
	if p == wr.SingleTransaction {
		return []string{subject.OutcomeClean}
	}
	out := []string{subject.OutcomeClean}
	for n := 2; n <= k; n++ {
		out = append(out, Duplicate(n))
	}
	return out
}

func jobRow(id, key string) string { return id + "|" + key }

func classifyRedelivery(s subject.State) string {
	j, p := len(s[TableJobs]), len(s[TableProcessed])
	switch {
	case j == 1 && p == 1:
		return subject.OutcomeClean
	case j > 1 && p == 1:
		return Duplicate(j)
	}
	return fmt.Sprintf("jobs-%d-processed-%d", j, p)
}

// modelOutcomes runs the patterns' commit model (worker/redelivery's
// Model, which the redelivery scenario's oracle runs too: a commit makes
// pending writes durable, a crash discards the rest) crashed at each
// point it passes and not at all, each followed by a recovery, and
// returns the distinct outcomes in order.
func modelOutcomes(p wr.Pattern) []string {
	crashes := append([]string{""}, wr.PointsOf(p)...)
	var out []string
	seen := map[string]bool{}
	for _, at := range crashes {
		ds := wr.Deliveries(p, at, 2)
		last := ds[len(ds)-1].After
		o := classifyRedelivery(subject.State{TableJobs: make([]string, last.Jobs), TableProcessed: make([]string, last.Processed)})
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

// readRedelivery lists both tables. A worker killed before it created the
// file or a table leaves them missing; that reads as empty, and the parent
// creates nothing, so the recovery finds the file as the killed worker
// left it.
func readRedelivery(ctx context.Context, path string) (subject.State, error) {
	return readWith(ctx, path, wr.Options(path), wr.ReadState)
}
