package explore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"

	wb "idemlab/worker/batch"
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

// Patterns is the registry of built-in subjects, in report order: the
// hand-written article workers (handwritten.go), which fold folders of
// format 6 or older and race on PostgreSQL, then BuiltIn.
func Patterns() []Pattern {
	return append(handWritten(), BuiltIn()...)
}

// BuiltIn are the subjects a run on SQLite plans besides the article
// files: what no pattern file can express, the batch journal against the
// receiver, the TTL claim's probe inside the TTL, and the lease takeover.
func BuiltIn() []Pattern {
	return []Pattern{batchPattern(wb.ModeJournal), batchPattern(wb.ModeRerunAll), claimPattern(), leasePattern()}
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
