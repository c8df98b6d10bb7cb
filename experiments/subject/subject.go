// Package subject is what a built-in subject of the fault scenarios
// declares: a value (Subject) that names its workers, its model (the
// points a delivery passes, the state a crash at each leaves, the
// outcomes a crash or a race may end in) and its recovery, how it
// prepares and reads its database, and the invariants that judge a
// trial's history. The counts a run plans with (the processes of one
// trial, of a race's recovery) are derived from that model here, never
// typed in. The subjects themselves are in subject/builtin; explore
// runs them.
package subject

import (
	"context"
	"encoding/json"
	"slices"

	wb "idemlab/worker/batch"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// State is a subject's durable tables as the parent read them after a
// step: table name to rows, each row rendered as one string. A generic map
// keeps the fold, the invariants and the records the same for every
// subject; each subject says how to read and judge its own tables.
type State map[string][]string

// Window names the two commits between which a crash leaves the subject
// violating its invariants: a sweep expects exactly the discovered points
// from From (inclusive) to To (exclusive) to violate. Zero means no point
// violates.
type Window struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Points are the discovered points from w.From (inclusive) to w.To
// (exclusive; empty is past the last point). ok is false when either is
// missing or they are out of order; a zero window is empty and ok.
func (w Window) Points(discovered []string) (in []string, ok bool) {
	if w == (Window{}) {
		return []string{}, true
	}
	from, to := slices.Index(discovered, w.From), len(discovered)
	if w.To != "" {
		to = slices.Index(discovered, w.To)
	}
	if from < 0 || to < 0 || from >= to {
		return nil, false
	}
	return append([]string{}, discovered[from:to]...), true
}

// Params are what a subject reads of a run's settings: the event and job
// it delivers, the batch's items, a racer's attempts and the backend.
type Params struct {
	EventID     string
	JobKey      string
	Items       int
	MaxAttempts int
	// Backend is empty for SQLite.
	Backend string
	// SQLite is what every acknowledging worker must read back.
	SQLite sqlitedb.Settings
}

// Files are a trial's durable places: its database file and, for a
// subject that sends, the URL of the receiver the parent runs for it.
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

// Subject is one way of handling a delivery that explore crashes, kills
// and races. Adding one is one more value in explore's list: its workers,
// its model, how to read its tables, how it recovers, its invariants and
// its allowed outcomes.
type Subject struct {
	Name string
	// Worker delivers once; discovery, crashed and killed deliveries and
	// (unless Recovery says otherwise) every recovery run it.
	Worker string
	// Racer delivers behind a barrier, with RacerArgs. Empty: the subject
	// has no races on SQLite.
	Racer     string
	RacerArgs func(p Params, f Files) []string
	// PostgresRacer is the worker raced on PostgreSQL, with RacerArgs,
	// for a subject that races there alone; RacesOnPostgres says the
	// subject races on PostgreSQL at all.
	PostgresRacer   string
	RacesOnPostgres bool
	// Tables is the DDL of the subject's tables in the dialect's words,
	// which the parent runs on PostgreSQL before the racers start;
	// ReadOn lists the tables through a store, as Read does a file.
	Tables func(d store.Dialect) string
	ReadOn func(ctx context.Context, st store.Store) (State, error)
	// Window is the commits bounding the violating points; an empty To
	// runs to the last point.
	Window Window
	// TrialShare is the subject's random trials per 100 of --trials, so a
	// slow subject can run fewer than a fast one.
	TrialShare int
	// Sends says each trial gets its own receiver, whose log joins the
	// state as the receiver's table; Fenced that the receiver refuses
	// stale generations.
	Sends  bool
	Fenced bool
	// Takeover, set for a lease subject, adds the paused-holder
	// conditions.
	Takeover *Takeover
	// Points are the crash points a normal delivery passes, from the
	// worker's own model of them; the run discovers the points
	// themselves.
	Points func(p Params) []string
	// Crashed is the worker's model of the state a delivery leaves when
	// it crashes at one of Points, or runs to its end (at ""), as far as
	// the recovery reads it. Nil: the recovery reads no state.
	Crashed func(p Params, at string) State
	// Args are the worker's arguments for one delivery.
	Args func(p Params, f Files) []string
	// Recovery gives the next recovery process after the steps done so
	// far, from the state the last one left; ok false ends the trial. Nil
	// means one process of Worker with Args.
	Recovery func(p Params, f Files, done []string, s State) (a Action, ok bool)
	// Looked is what the receiver log in s says of a lookup of key.
	Looked func(s State, key string) Lookup
	// Prepare creates an empty file with the tables, so racers start from
	// the same state and the first statement after the release is theirs.
	Prepare func(ctx context.Context, db string) error
	// Read lists the tables, opening the file as the next process would
	// (which rolls back a hot journal left by a crash).
	Read func(ctx context.Context, db string) (State, error)
	// CheckRows says which rows cannot have come from the settings.
	CheckRows func(p Params, s State) []string
	// Classify names the outcome a final state is.
	Classify func(p Params, s State) string
	// Clean are the outcomes that break no invariant; nil means {clean}.
	Clean []string
	// Invariants hold after every recovery of a correct subject.
	Invariants []Invariant
	// Model gives the outcome after a crash at a model point and a
	// recovery, for every point the model passes and for no crash; the
	// oracle's allowed set for an unknown crash point is their union.
	Model func(p Params) []string
	// RaceAllowed is the set of outcomes after k racers and a recovery.
	RaceAllowed func(p Params, k int) []string
	// Account checks an acknowledging worker's report payload against
	// the state before and after it, one message per disagreement.
	Account func(p Params, role, sender string, result json.RawMessage, before, after State) []string
	// Claim decodes what a racer says it did.
	Claim func(result json.RawMessage, racer bool) (Claim, error)
}

// Takeover is a lease subject's paused-holder trials and their model.
type Takeover struct {
	// Args are the arguments of the holder paused at pauseAt, or of the
	// successor that takes its lease over; fence false runs both
	// unfenced.
	Args func(p Params, f Files, successor, fence bool, pauseAt string) []string
	// Window starts at the first point where an unfenced paused holder
	// acts as a non-holder; Damage are the outcomes it may leave there.
	Window Window
	Damage []string
}

// CleanSet is the subject's outcomes that break nothing.
func (s Subject) CleanSet() []string {
	if s.Clean == nil {
		return []string{OutcomeClean}
	}
	return s.Clean
}

// NextAction is the recovery process after done, from state st; the run
// and the fold both call it, so both follow one plan.
func (s Subject) NextAction(p Params, f Files, done []string, st State) (Action, bool) {
	if s.Recovery == nil {
		if len(done) > 0 {
			return Action{}, false
		}
		return Action{Step: StepRecovery, Role: RoleRecovery, Worker: s.Worker, Args: s.Args(p, f)}, true
	}
	return s.Recovery(p, f, done, st)
}

// RacerOn is the worker the subject races on backend b ("" for SQLite);
// empty when it does not race there.
func (s Subject) RacerOn(b string) string {
	if b == store.BackendPostgres {
		if !s.RacesOnPostgres {
			return ""
		}
		if s.PostgresRacer != "" {
			return s.PostgresRacer
		}
	}
	return s.Racer
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
