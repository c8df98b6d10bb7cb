package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// State is a pattern's durable tables as the parent read them after a
// step: table name to rows, each row rendered as one string. A generic map
// keeps the fold, the invariants and the records the same for every
// pattern; each pattern says how to read and judge its own tables.
type State map[string][]string

// Window names the two commits between which a crash leaves the pattern
// violating its invariants: a sweep expects exactly the discovered points
// from From (inclusive) to To (exclusive) to violate. Zero means no point
// violates.
type Window struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Files are a trial's durable places: its database file and, for a
// pattern that sends, the URL of the receiver the parent runs for it.
type Files struct {
	DB       string
	Receiver string
}

// As is f with the receiver URL given to the process whose sender token is
// tok: the bare URL with the token as a path prefix. An empty token (a
// folder of format 4 or older) leaves the URL bare.
func (f Files) As(tok string) Files {
	if tok != "" && f.Receiver != "" {
		f.Receiver = wire.SenderURL(f.Receiver, tok)
	}
	return f
}

// Lookup is the parent's question to the receiver before a resolve, as
// the batch worker's contract defines it.
type Lookup = wb.Lookup

// Action is one process of a recovery.
type Action struct {
	// Step names the observation; Role the history step.
	Step   string
	Role   string
	Worker string
	Args   []string
	// LookUp, when set, is a send ("job:item:step") the parent looks up at
	// the receiver before the step; With builds Args from the answer.
	LookUp string
	With   func(l Lookup) []string
}

// Pattern is one way of handling a delivery that explore crashes, kills
// and races. Adding a pattern is one more entry in Patterns: its workers,
// how to read its tables, how it recovers, its invariants and its allowed
// outcomes. Nothing else names a pattern.
type Pattern struct {
	Name string
	// Worker delivers once; discovery, crashed and killed deliveries and
	// (unless Recovery says otherwise) every recovery run it.
	Worker string
	// Racer delivers behind a barrier, with RacerArgs. Empty: the pattern
	// has no races on SQLite.
	Racer     string
	RacerArgs func(st Settings, f Files) []string
	// PostgresRacer is the worker raced on PostgreSQL, with RacerArgs,
	// for a pattern that races there alone; RacesOnPostgres says the
	// pattern races on PostgreSQL at all.
	PostgresRacer   string
	RacesOnPostgres bool
	// Tables is the DDL of the pattern's tables in the dialect's words,
	// which the parent runs on PostgreSQL before the racers start;
	// ReadOn lists the tables through a store, as Read does a file.
	Tables func(d store.Dialect) string
	ReadOn func(ctx context.Context, st store.Store) (State, error)
	// Window is the commits bounding the violating points; an empty To
	// runs to the last point.
	Window Window
	// TrialShare is the pattern's random trials per 100 of --trials, so a
	// slow pattern can run fewer than a fast one.
	TrialShare int
	// Sends says each trial gets its own receiver, whose log joins the
	// state as TableSends; Fenced that the receiver refuses stale
	// generations.
	Sends  bool
	Fenced bool
	// Takeover adds the paused-holder conditions (lease patterns only).
	Takeover bool
	// Points are the crash points a normal delivery passes, from the
	// worker's own model of them; the run discovers the points
	// themselves. TrialProcesses is the most processes one trial starts,
	// its delivery and whole recovery. Processes counts on both.
	Points         func(st Settings) []string
	TrialProcesses int
	// RaceRecovery is how many processes the recovery after a race on
	// PostgreSQL starts when every racer ran to its end, as none is
	// killed there: such racers leave no send in flight to resolve.
	RaceRecovery int
	// Args are the worker's arguments for one delivery.
	Args func(st Settings, f Files) []string
	// Recovery gives the next recovery process after the steps done so
	// far, from the state the last one left; ok false ends the trial. Nil
	// means one process of Worker with Args.
	Recovery func(st Settings, f Files, done []string, s State) (a Action, ok bool)
	// Looked is what the receiver log in s says of a lookup of key.
	Looked func(s State, key string) Lookup
	// Prepare creates an empty file with the tables, so racers start from
	// the same state and the first statement after the release is theirs.
	Prepare func(ctx context.Context, db string) error
	// Read lists the tables, opening the file as the next process would
	// (which rolls back a hot journal left by a crash).
	Read func(ctx context.Context, db string) (State, error)
	// CheckRows says which rows cannot have come from the settings.
	CheckRows func(st Settings, s State) []string
	// Classify names the outcome a final state is.
	Classify func(st Settings, s State) string
	// Clean are the outcomes that break no invariant; nil means {clean}.
	Clean []string
	// Invariants hold after every recovery of a correct pattern.
	Invariants []Invariant
	// Model gives the outcome after a crash at a model point and a
	// recovery, for every point the model passes and for no crash; the
	// oracle's allowed set for an unknown crash point is their union.
	Model func(st Settings) []string
	// RaceAllowed is the set of outcomes after k racers and a recovery.
	RaceAllowed func(st Settings, k int) []string
	// Account checks an acknowledging worker's report payload against
	// the state before and after it, one message per disagreement.
	Account func(st Settings, role, sender string, result json.RawMessage, before, after State) []string
	// Claim decodes what a racer says it did.
	Claim func(result json.RawMessage, racer bool) (Claim, error)
}

// CleanSet is the pattern's outcomes that break nothing.
func (p Pattern) CleanSet() []string {
	if p.Clean == nil {
		return []string{OutcomeClean}
	}
	return p.Clean
}

// nextAction is the recovery process after done, from state s; the run
// and the fold both call it, so both follow one plan.
func (p Pattern) nextAction(st Settings, f Files, done []string, s State) (Action, bool) {
	if p.Recovery == nil {
		if len(done) > 0 {
			return Action{}, false
		}
		return Action{Step: StepRecovery, Role: RoleRecovery, Worker: p.Worker, Args: p.Args(st, f)}, true
	}
	return p.Recovery(st, f, done, s)
}

// Claim is a worker's account of one delivery.
type Claim struct {
	// WorkAdded: this delivery wrote the follow-up work.
	WorkAdded bool
	// FoundDone: this delivery found the event already handled.
	FoundDone bool
	Settings  sqlitedb.Settings
	// Postgres is what a PostgreSQL session read back.
	Postgres *store.PGSettings
	// Racers only. SerializationErrors are the 40001 and 40P01 failures
	// run again; End, when set, names how a racer that ran to its end
	// ended, in place of "ack".
	Attempts            int
	BusyErrors          int
	SerializationErrors int
	Error               string
	ErrorClass          string
	End                 string
}

// racerOn is the worker the pattern races on backend b ("" for SQLite);
// empty when it does not race there.
func (p Pattern) racerOn(b string) string {
	if b == store.BackendPostgres {
		if !p.RacesOnPostgres {
			return ""
		}
		if p.PostgresRacer != "" {
			return p.PostgresRacer
		}
	}
	return p.Racer
}

// Patterns is the registry, in report order.
func Patterns() []Pattern {
	return []Pattern{
		redeliveryPattern(wr.SeparateCommit), redeliveryPattern(wr.SingleTransaction),
		batchPattern(wb.ModeJournal), batchPattern(wb.ModeRerunAll), claimPattern(), leasePattern(),
	}
}

// LookupPattern finds a pattern by name.
func LookupPattern(name string) (Pattern, bool) {
	for _, p := range Patterns() {
		if p.Name == name {
			return p, true
		}
	}
	return Pattern{}, false
}

// Table names of the redelivery patterns.
const (
	TableJobs      = wr.TableJobs
	TableProcessed = wr.TableProcessed
)

// Outcome names. A duplicate's name carries its job count.
const (
	OutcomeClean = "clean"
)

// Duplicate names the outcome with n jobs and one processed record.
func Duplicate(n int) string { return "duplicate-" + strconv.Itoa(n) }

func redeliveryPattern(p wr.Pattern) Pattern {
	pat := Pattern{
		Name:           string(p),
		Worker:         wr.WorkerName,
		Racer:          we.RacerName,
		TrialShare:     100,
		Points:         func(Settings) []string { return wr.PointsOf(p) },
		TrialProcesses: 2,
		RaceRecovery:   1,
		Args:           func(st Settings, f Files) []string { return deliveryArgs(st, p, f.DB).Argv() },
		RacerArgs: func(st Settings, f Files) []string {
			return we.RaceArgs{Delivery: deliveryArgs(st, p, f.DB), ReadyFD: harness.BarrierReadyFD, MaxAttempts: st.MaxAttempts}.Argv()
		},
		RacesOnPostgres: true,
		Tables:          func(store.Dialect) string { return wr.Schema },
		ReadOn: func(ctx context.Context, st store.Store) (State, error) {
			s, err := wr.ReadState(ctx, st)
			return State(s.Lines()), err
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
		Classify:  func(_ Settings, s State) string { return classifyRedelivery(s) },
		Invariants: []Invariant{
			{"one-job", oneRow(TableJobs, "job")},
			{"one-processed-record", oneRow(TableProcessed, "processed record")},
			{"recovery-acknowledged", recoveryAcknowledged},
			{"ack-leaves-work-done", ackLeavesWorkDone},
		},
		Model: func(Settings) []string { return modelOutcomes(p) },
		Account: func(st Settings, _, _ string, raw json.RawMessage, before, after State) []string {
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
		Claim: func(raw json.RawMessage, racer bool) (Claim, error) {
			if racer {
				var r we.RaceResult
				if err := results.DecodeStrict(raw, &r); err != nil {
					return Claim{}, err
				}
				if r.Pattern != p {
					return Claim{}, fmt.Errorf("the racer says it ran %s, the pattern is %s", r.Pattern, p)
				}
				return Claim{WorkAdded: r.Outcome.JobInserted, FoundDone: r.Outcome.AlreadyProcessed, Settings: r.Settings, Postgres: r.Postgres,
					Attempts: r.Attempts, BusyErrors: r.BusyErrors, SerializationErrors: r.SerializationErrors, Error: r.Error, ErrorClass: r.ErrorClass}, nil
			}
			var r wr.Result
			if err := results.DecodeStrict(raw, &r); err != nil {
				return Claim{}, err
			}
			if r.Pattern != p {
				return Claim{}, fmt.Errorf("the worker says it ran %s, the pattern is %s", r.Pattern, p)
			}
			return Claim{WorkAdded: r.Outcome.JobInserted, FoundDone: r.Outcome.AlreadyProcessed, Settings: r.Settings}, nil
		},
		RaceAllowed: func(_ Settings, k int) []string { return raceAllowed(p, k) },
	}
	if p == wr.SeparateCommit {
		pat.Window = Window{From: wr.PointAfterJobCommit, To: wr.PointAfterProcessedCommit}
	}
	return pat
}

// deliveryArgs are the delivering worker's arguments for one delivery of
// the settings' event with pattern p.
func deliveryArgs(st Settings, p wr.Pattern, db string) wr.Args {
	return wr.Args{DB: db, Pattern: p, Event: wr.Event{ID: st.EventID, JobKey: st.JobKey}, Backend: st.Backend}
}

// checkRedeliveryRows says which rows of the two tables cannot have come
// from delivering the settings' one event.
func checkRedeliveryRows(st Settings, s State) []string {
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
		return []string{OutcomeClean}
	}
	out := []string{OutcomeClean}
	for n := 2; n <= k; n++ {
		out = append(out, Duplicate(n))
	}
	return out
}

func jobRow(id, key string) string { return id + "|" + key }

func classifyRedelivery(s State) string {
	j, p := len(s[TableJobs]), len(s[TableProcessed])
	switch {
	case j == 1 && p == 1:
		return OutcomeClean
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
		o := classifyRedelivery(State{TableJobs: make([]string, last.Jobs), TableProcessed: make([]string, last.Processed)})
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
func readRedelivery(ctx context.Context, path string) (State, error) {
	return readWith(ctx, path, wr.Options(path), wr.ReadState)
}

// lister is a worker's tables as its reader returns them, which renders
// them as State records them.
type lister interface{ Lines() map[string][]string }

// readWith reads a pattern's file, opened with o, through the reader of
// the worker that writes it. A file that does not exist is not created: it
// reads as the reader's tables, empty.
func readWith[T lister](ctx context.Context, path string, o sqlitedb.Options, read func(context.Context, store.Store) (T, error)) (State, error) {
	var none T
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return State(none.Lines()), nil
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
	return State(v.Lines()), nil
}
