package claim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Registry names of the claim workers, used by the worker registry and by
// the fold that checks each recorded command line.
const (
	RaceWorker  = "claim.race"
	BenchWorker = "claim.bench"
	// PoolWorker is a long-lived racer that serves many races, one request
	// line at a time, so a run pays process start-up once per pool member.
	PoolWorker = "claim.pool"
)

// Request is one race as the parent sends it to a pool member: which file
// to open, which claim to make, and the clock to make it with.
type Request struct {
	// Race is the parent's sequence number of the race, from 1.
	Race int `json:"race"`
	// Slot is the racer's place in the race, from 0.
	Slot  int    `json:"slot"`
	Label string `json:"label"`
	DB    string `json:"db"`
	// Variant is the claim this racer makes.
	Variant Variant `json:"variant"`
	// EventMS is the caller's event timestamp.
	EventMS int64 `json:"event_time_ms"`
	// ClockOffsetMS is added to the member's clock; NowMS, unless NoPin,
	// pins the clock instead.
	ClockOffsetMS int64 `json:"clock_offset_ms"`
	NowMS         int64 `json:"now_ms"`
	// FollowUp makes a winner write the downstream fields.
	FollowUp bool `json:"follow_up"`
}

// Answer is a line on the answer pipe: first ready (the connection is
// open), then done (the claim is made and the connection closed).
type Answer struct {
	Race  int    `json:"race"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// Answer states.
const (
	StateReady = "ready"
	StateDone  = "done"
)

// Entry is one race in a member's transcript: the request as received,
// what its own connection read back, when it was ready and released by
// its own clock, and what its claim did.
type Entry struct {
	Request Request           `json:"request"`
	SQLite  sqlitedb.Settings `json:"sqlite,omitzero"`
	// Postgres is what the session read back, on PostgreSQL.
	Postgres     *store.PGSettings `json:"postgres,omitempty"`
	ReadyAtUS    int64             `json:"ready_at_us"`
	ReleasedAtUS int64             `json:"released_at_us"`
	Outcome      Outcome           `json:"outcome"`
	FollowedUp   bool              `json:"followed_up"`
	ExternalID   string            `json:"external_id,omitempty"`
	BusyRetries  int               `json:"busy_retries"`
	// ClaimError is the error of a user's statement that failed when it
	// ran (Outcome.Path is PathError).
	ClaimError string `json:"claim_error,omitempty"`
	// SerializationRetries and DeadlockRetries are PostgreSQL's, the
	// claim's and the follow-up's together, as BusyRetries are.
	SerializationRetries int `json:"serialization_retries,omitempty"`
	DeadlockRetries      int `json:"deadlock_retries,omitempty"`
}

// addRetries adds a statement's retries to the entry's.
func (e *Entry) addRetries(o Outcome) {
	e.BusyRetries += o.BusyRetries
	e.SerializationRetries += o.SerializationRetries
	e.DeadlockRetries += o.DeadlockRetries
}

// PoolResult is the report payload of "claim.pool": the whole transcript.
type PoolResult struct {
	Label string  `json:"label"`
	Races []Entry `json:"races"`
}

// PoolMain is the registered worker "claim.pool". It serves requests from
// stdin until EOF, answers on descriptor 3, waits for each release on
// descriptor 4, and reports its transcript on stdout when done.
func PoolMain(call *protocol.Call) int {
	a, err := ParsePoolArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	// A member does one thing at a time; one P keeps its idle runtime
	// threads from spinning on every wake-up, which cost more CPU than
	// the claims on a machine shared by nine such processes.
	runtime.GOMAXPROCS(1)
	answers := os.NewFile(3, "answers")
	release := os.NewFile(4, "release")
	if answers == nil || release == nil {
		return call.Usage(errors.New("descriptors 3 (answers) and 4 (release) must be inherited"))
	}
	res, err := Serve(context.Background(), a, call.Stdin, answers, release)
	if err != nil {
		return call.Fail(err)
	}
	return call.Finish(res, protocol.ExitACK)
}

// Serve runs a member's loop. It is separate from PoolMain so tests can
// drive it in-process with pipes.
func Serve(ctx context.Context, c PoolArgs, requests io.Reader, answers io.Writer, release io.Reader) (PoolResult, error) {
	res := PoolResult{Label: c.Label, Races: []Entry{}}
	sc := bufio.NewScanner(requests)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	one := make([]byte, 1)
	var sessions store.Sessions
	defer sessions.Close()
	for sc.Scan() {
		var req Request
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return res, fmt.Errorf("request %q: %w", sc.Text(), err)
		}
		e, err := serveOne(ctx, c, &sessions, req, answers, func() error {
			_, err := io.ReadFull(release, one)
			return err
		})
		if err != nil {
			answer(answers, Answer{Race: req.Race, State: StateDone, Error: err.Error()})
			return res, fmt.Errorf("race %d: %w", req.Race, err)
		}
		res.Races = append(res.Races, e)
		if err := answer(answers, Answer{Race: req.Race, State: StateDone}); err != nil {
			return res, err
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read requests: %w", err)
	}
	return res, nil
}

// serveOne opens its own connection to the race's file before it says
// ready, so the open's cost is paid before the release and the claims
// start as close together as processes can. On PostgreSQL the member's
// session is kept from race to race (store.Sessions) and moved to the
// race's schema.
func serveOne(ctx context.Context, c PoolArgs, sessions *store.Sessions, req Request, answers io.Writer, wait func() error) (Entry, error) {
	e := Entry{Request: req}
	v, err := c.variant(req.Variant)
	if err != nil {
		return e, err
	}
	db, rb, release, err := sessions.Open(ctx, c.Backend, req.DB, Options(req.DB, time.Duration(c.BusyTimeoutMS)*time.Millisecond))
	if err != nil {
		return e, err
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	if rb.SQLite != nil {
		e.SQLite = *rb.SQLite
	}
	e.Postgres = rb.Postgres
	e.ReadyAtUS = time.Now().UnixMicro()
	if err := answer(answers, Answer{Race: req.Race, State: StateReady}); err != nil {
		return e, err
	}
	if err := wait(); err != nil {
		return e, fmt.Errorf("wait for release: %w", err)
	}
	e.ReleasedAtUS = time.Now().UnixMicro()
	clock := Clock{OffsetMS: req.ClockOffsetMS, PinnedMS: req.NowMS}
	ev := Event{Fingerprint: c.Fingerprint, Source: c.Source, Level: c.Level, Message: c.Message, Time: req.EventMS}
	ttl := time.Duration(c.TTLMS) * time.Millisecond
	var out Outcome
	if v == User {
		// The user's statement failing is its result, not the member's.
		if out, err = ClaimUserOn(ctx, db, c.statements(), ev, clock.Now(), ttl); err != nil {
			e.ClaimError = err.Error()
		}
	} else if out, err = ClaimOn(ctx, db, v, ev, clock.Now(), ttl); err != nil {
		return e, err
	}
	e.Outcome = out
	e.addRetries(out)
	if out.Won && req.FollowUp {
		e.ExternalID = ExternalIDFor(req.Label)
		n, err := FollowUpOn(ctx, db, c.Fingerprint, c.Classification, e.ExternalID)
		e.addRetries(n)
		if err != nil {
			return e, err
		}
		e.FollowedUp = true
	}
	released = true
	if err := release(); err != nil {
		return e, fmt.Errorf("close database: %w", err)
	}
	return e, nil
}

func answer(w io.Writer, a Answer) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	return nil
}
