package claim

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// NoPin marks -now-ms as unset: the worker reads its own clock.
const NoPin = int64(-1)

// Clock is the worker's own clock in Unix milliseconds. The parent may
// shift it by an offset, so that "the TTL has passed" costs no real
// waiting, or pin it to an exact instant for the boundary round, which no
// real clock can hit to the millisecond.
type Clock struct {
	OffsetMS int64
	PinnedMS int64
}

// Now returns the clock's current reading.
func (c Clock) Now() int64 {
	if c.PinnedMS != NoPin {
		return c.PinnedMS
	}
	return time.Now().UnixMilli() + c.OffsetMS
}

// Barrier holds a worker until the parent releases every racer at once.
// Ready receives one byte when the worker is ready; Release is read to its
// end, which comes when the parent closes the write side of the pipe.
type Barrier struct {
	Ready   io.Writer
	Release io.Reader
}

// Wait signals readiness and blocks until the release.
func (b Barrier) Wait() error {
	if b.Ready != nil {
		if _, err := b.Ready.Write([]byte{'r'}); err != nil {
			return fmt.Errorf("signal readiness: %w", err)
		}
	}
	if b.Release != nil {
		if _, err := io.Copy(io.Discard, b.Release); err != nil {
			return fmt.Errorf("wait for release: %w", err)
		}
	}
	return nil
}

// RaceResult is the report payload of "claim.race".
type RaceResult struct {
	Label       string            `json:"label"`
	Variant     Variant           `json:"variant"`
	Outcome     Outcome           `json:"outcome"`
	CallerMS    int64             `json:"caller_time_ms"`
	FollowedUp  bool              `json:"followed_up"`
	ExternalID  string            `json:"external_id,omitempty"`
	BusyRetries int               `json:"busy_retries"`
	Settings    sqlitedb.Settings `json:"settings,omitzero"`
	// Postgres is what the session read back, on PostgreSQL, and the
	// retries are PostgreSQL's, the claim's and the follow-up's.
	Postgres             *store.PGSettings `json:"postgres,omitempty"`
	SerializationRetries int               `json:"serialization_retries,omitempty"`
	DeadlockRetries      int               `json:"deadlock_retries,omitempty"`
}

// ExternalIDFor is the external id a winner's follow-up writes: it names
// the winner, so the row shows who did the downstream work.
func ExternalIDFor(label string) string { return "ext-" + label }

// barrier is the worker's side of the parent's barrier: readiness on the
// descriptor the arguments name, if any, the release on standard input.
func (a ClaimerArgs) barrier(call *protocol.Call) (Barrier, func()) {
	b := Barrier{Release: call.Stdin}
	if a.ReadyFD <= 0 {
		return b, func() {}
	}
	f := os.NewFile(uintptr(a.ReadyFD), "ready")
	b.Ready = f
	return b, func() { f.Close() }
}

// RaceMain is the registered worker "claim.race": it opens the file, waits
// behind the barrier, claims the fingerprint once and, if it won and
// -follow-up is set, writes the downstream fields.
func RaceMain(call *protocol.Call) int {
	a, err := ParseRaceArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	clock := Clock{OffsetMS: a.ClockOffsetMS, PinnedMS: a.NowMS}
	ctx := context.Background()
	db, rb, err := a.openBehindBarrier(ctx, call)
	if err != nil {
		return call.Fail(err)
	}
	defer db.Close()
	out, err := ClaimOn(ctx, db, a.Variant, a.Event, clock.Now(), time.Duration(a.TTLMS)*time.Millisecond)
	if err != nil {
		return call.Fail(err)
	}
	res := RaceResult{Label: a.Label, Variant: a.Variant, Outcome: out, CallerMS: a.Event.Time, Postgres: rb.Postgres}
	if rb.SQLite != nil {
		res.Settings = *rb.SQLite
	}
	res.addRetries(out)
	if out.Won && a.FollowUp {
		res.ExternalID = ExternalIDFor(a.Label)
		n, err := FollowUpOn(ctx, db, a.Event.Fingerprint, a.Classification, res.ExternalID)
		res.addRetries(n)
		if err != nil {
			return call.Fail(err)
		}
		res.FollowedUp = true
	}
	if err := db.Close(); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	return call.Finish(res, protocol.ExitACK)
}

// addRetries adds a statement's retries to the result's.
func (r *RaceResult) addRetries(o Outcome) {
	r.BusyRetries += o.BusyRetries
	r.SerializationRetries += o.SerializationRetries
	r.DeadlockRetries += o.DeadlockRetries
}

// BenchResult is the report payload of "claim.bench".
type BenchResult struct {
	Claims      int     `json:"claims"`
	Won         []int   `json:"won"`
	BusyRetries int     `json:"busy_retries"`
	ElapsedMS   float64 `json:"elapsed_ms"`
	// SerializationRetries and DeadlockRetries are PostgreSQL's.
	SerializationRetries int `json:"serialization_retries,omitempty"`
	DeadlockRetries      int `json:"deadlock_retries,omitempty"`
}

// BenchFingerprint names the i-th fingerprint of a benchmark loop.
func BenchFingerprint(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }

// BenchMain is the registered worker "claim.bench": behind the barrier it
// claims -count distinct fingerprints in a loop, each of which the other
// racing processes claim too, and reports which ones it won.
func BenchMain(call *protocol.Call) int {
	a, err := ParseBenchArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	db, _, err := a.openBehindBarrier(ctx, call)
	if err != nil {
		return call.Fail(err)
	}
	defer db.Close()
	res := BenchResult{Claims: a.Count, Won: []int{}}
	ttl := time.Duration(a.TTLMS) * time.Millisecond
	start := time.Now()
	for i := 0; i < a.Count; i++ {
		ev := a.Event
		ev.Fingerprint = BenchFingerprint(a.Event.Fingerprint, i)
		out, err := ClaimOn(ctx, db, a.Variant, ev, time.Now().UnixMilli(), ttl)
		res.BusyRetries += out.BusyRetries
		res.SerializationRetries += out.SerializationRetries
		res.DeadlockRetries += out.DeadlockRetries
		if err != nil {
			return call.Fail(err)
		}
		if out.Won {
			res.Won = append(res.Won, i)
		}
	}
	res.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
	if err := db.Close(); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	return call.Finish(res, protocol.ExitACK)
}

// openBehindBarrier opens the file, then signals readiness and waits for
// the parent's release, so that the open's cost is paid before the race
// and every racer claims as close to the same instant as processes can.
func (a ClaimerArgs) openBehindBarrier(ctx context.Context, call *protocol.Call) (store.Store, store.ReadBack, error) {
	opts, err := sqlitedb.FromEnv(Options(a.DB, time.Duration(a.BusyTimeoutMS)*time.Millisecond))
	if err != nil {
		return store.Store{}, store.ReadBack{}, err
	}
	db, rb, err := store.Open(ctx, a.Backend, a.DB, opts)
	if err != nil {
		return db, rb, err
	}
	b, closeReady := a.barrier(call)
	err = b.Wait()
	closeReady()
	if err != nil {
		db.Close()
		return store.Store{}, rb, err
	}
	return db, rb, nil
}
