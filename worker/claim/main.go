package claim

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
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
	Settings    sqlitedb.Settings `json:"settings"`
}

// ExternalIDFor is the external id a winner's follow-up writes: it names
// the winner, so the row shows who did the downstream work.
func ExternalIDFor(label string) string { return "ext-" + label }

// commonFlags are the flags both claim workers take.
type commonFlags struct {
	db      string
	variant string
	ttlMS   int64
	busyMS  int64
	readyFD int
	ev      Event
}

func (c *commonFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.db, "db", "", "database file")
	fs.StringVar(&c.variant, "variant", "", "claim variant")
	fs.Int64Var(&c.ttlMS, "ttl-ms", 0, "claim TTL in milliseconds")
	fs.Int64Var(&c.busyMS, "busy-timeout-ms", 5000, "SQLite busy timeout in milliseconds")
	fs.IntVar(&c.readyFD, "ready-fd", 0, "inherited file descriptor to signal readiness on; 0 means none")
	fs.StringVar(&c.ev.Fingerprint, "fingerprint", "", "event fingerprint")
	fs.StringVar(&c.ev.Source, "source", "", "event source")
	fs.StringVar(&c.ev.Level, "level", "", "event level")
	fs.StringVar(&c.ev.Message, "message", "", "event message")
	fs.Int64Var(&c.ev.Time, "event-time-ms", 0, "the caller's event timestamp, Unix milliseconds")
}

func (c *commonFlags) check() (Variant, error) {
	v, err := ParseVariant(c.variant)
	if err != nil {
		return "", err
	}
	if c.db == "" || c.ev.Fingerprint == "" {
		return "", errors.New("-db and -fingerprint are required")
	}
	if c.ttlMS <= 0 {
		return "", errors.New("-ttl-ms must be positive")
	}
	if c.busyMS < 0 {
		return "", errors.New("-busy-timeout-ms must not be negative")
	}
	return v, nil
}

func (c *commonFlags) barrier(call *protocol.Call) (Barrier, func()) {
	b := Barrier{Release: call.Stdin}
	if c.readyFD <= 0 {
		return b, func() {}
	}
	f := os.NewFile(uintptr(c.readyFD), "ready")
	b.Ready = f
	return b, func() { f.Close() }
}

// RaceMain is the registered worker "claim.race": it opens the file, waits
// behind the barrier, claims the fingerprint once and, if it won and
// -follow-up is set, writes the downstream fields.
func RaceMain(call *protocol.Call) int {
	fs := flag.NewFlagSet(call.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c commonFlags
	c.bind(fs)
	label := fs.String("label", "", "this racer's name")
	offset := fs.Int64("clock-offset-ms", 0, "added to the worker's clock")
	pinned := fs.Int64("now-ms", NoPin, "pin the clock to this instant; -1 means the real clock")
	followUp := fs.Bool("follow-up", false, "the winner writes the downstream fields")
	classification := fs.String("classification", "", "classification the winner's follow-up writes")
	if err := fs.Parse(call.Args); err != nil {
		return call.Usage(err)
	}
	v, err := c.check()
	if err != nil {
		return call.Usage(err)
	}
	if *label == "" {
		return call.Usage(errors.New("-label is required"))
	}
	clock := Clock{OffsetMS: *offset, PinnedMS: *pinned}
	ctx := context.Background()
	db, settings, err := c.openBehindBarrier(ctx, call)
	if err != nil {
		return call.Fail(err)
	}
	defer db.Close()
	out, err := Claim(ctx, db, v, c.ev, clock.Now(), time.Duration(c.ttlMS)*time.Millisecond)
	if err != nil {
		return call.Fail(err)
	}
	res := RaceResult{Label: *label, Variant: v, Outcome: out, CallerMS: c.ev.Time, BusyRetries: out.BusyRetries, Settings: settings}
	if out.Won && *followUp {
		res.ExternalID = ExternalIDFor(*label)
		n, err := FollowUp(ctx, db, c.ev.Fingerprint, *classification, res.ExternalID)
		res.BusyRetries += n
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

// BenchResult is the report payload of "claim.bench".
type BenchResult struct {
	Claims      int     `json:"claims"`
	Won         []int   `json:"won"`
	BusyRetries int     `json:"busy_retries"`
	ElapsedMS   float64 `json:"elapsed_ms"`
}

// BenchFingerprint names the i-th fingerprint of a benchmark loop.
func BenchFingerprint(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }

// BenchMain is the registered worker "claim.bench": behind the barrier it
// claims -count distinct fingerprints in a loop, each of which the other
// racing processes claim too, and reports which ones it won.
func BenchMain(call *protocol.Call) int {
	fs := flag.NewFlagSet(call.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c commonFlags
	c.bind(fs)
	count := fs.Int("count", 0, "number of fingerprints to claim")
	if err := fs.Parse(call.Args); err != nil {
		return call.Usage(err)
	}
	v, err := c.check()
	if err != nil {
		return call.Usage(err)
	}
	if *count <= 0 {
		return call.Usage(errors.New("-count must be positive"))
	}
	ctx := context.Background()
	db, _, err := c.openBehindBarrier(ctx, call)
	if err != nil {
		return call.Fail(err)
	}
	defer db.Close()
	res := BenchResult{Claims: *count, Won: []int{}}
	ttl := time.Duration(c.ttlMS) * time.Millisecond
	start := time.Now()
	for i := 0; i < *count; i++ {
		ev := c.ev
		ev.Fingerprint = BenchFingerprint(c.ev.Fingerprint, i)
		out, err := Claim(ctx, db, v, ev, time.Now().UnixMilli(), ttl)
		res.BusyRetries += out.BusyRetries
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
func (c *commonFlags) openBehindBarrier(ctx context.Context, call *protocol.Call) (*sql.DB, sqlitedb.Settings, error) {
	opts, err := sqlitedb.FromEnv(Options(c.db, time.Duration(c.busyMS)*time.Millisecond))
	if err != nil {
		return nil, sqlitedb.Settings{}, err
	}
	db, settings, err := sqlitedb.Open(ctx, opts)
	if err != nil {
		return nil, settings, err
	}
	b, closeReady := c.barrier(call)
	err = b.Wait()
	closeReady()
	if err != nil {
		db.Close()
		return nil, settings, err
	}
	return db, settings, nil
}
