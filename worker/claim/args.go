package claim

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"idemlab/worker/store"
)

// Each claim worker's arguments are a struct with one Argv, which the
// parent renders and the fold renders again to check each recorded
// command line, and one Parse, which the worker reads them back with.

// PoolArgs is what every race of one pool member shares.
type PoolArgs struct {
	Label          string
	Fingerprint    string
	Source         string
	Level          string
	Message        string
	Classification string
	TTLMS          int64
	BusyTimeoutMS  int64
	// ClaimSQL is the user's own claim statement, which requests of
	// variant User run, and FallbackSQL the one it falls back to on the
	// old schema; both "" for the article's run.
	ClaimSQL    string
	FallbackSQL string
	// Backend is empty for SQLite, which keeps the command line as it was
	// before there was a choice; a request's DB is then a connection
	// string.
	Backend string
}

// Argv is the member's command line after the worker name. The user's
// statements are on it only when given, so the article's run renders as
// it always has.
func (a PoolArgs) Argv() []string {
	argv := []string{
		"-label", a.Label, "-fingerprint", a.Fingerprint, "-source", a.Source, "-level", a.Level,
		"-message", a.Message, "-classification", a.Classification,
		"-ttl-ms", fmt.Sprint(a.TTLMS), "-busy-timeout-ms", fmt.Sprint(a.BusyTimeoutMS),
	}
	if a.ClaimSQL != "" {
		argv = append(argv, "-claim-sql", a.ClaimSQL)
	}
	if a.FallbackSQL != "" {
		argv = append(argv, "-fallback-sql", a.FallbackSQL)
	}
	return store.BackendArgv(argv, a.Backend)
}

// ParsePoolArgs reads the command line PoolArgs.Argv renders.
func ParsePoolArgs(argv []string) (PoolArgs, error) {
	var a PoolArgs
	fs := newFlagSet(PoolWorker)
	fs.StringVar(&a.Label, "label", "", "this member's name")
	fs.StringVar(&a.Fingerprint, "fingerprint", "", "event fingerprint")
	fs.StringVar(&a.Source, "source", "", "event source")
	fs.StringVar(&a.Level, "level", "", "event level")
	fs.StringVar(&a.Message, "message", "", "event message")
	fs.StringVar(&a.Classification, "classification", "", "what a winner's follow-up writes")
	fs.Int64Var(&a.TTLMS, "ttl-ms", 0, "claim TTL in milliseconds")
	fs.Int64Var(&a.BusyTimeoutMS, "busy-timeout-ms", 0, "SQLite busy timeout in milliseconds")
	fs.StringVar(&a.ClaimSQL, "claim-sql", "", "the user's claim statement, run by requests of variant user")
	fs.StringVar(&a.FallbackSQL, "fallback-sql", "", "the statement the user's claim falls back to on the old schema")
	backend := store.BindBackend(fs, &a.Backend)
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := backend(); err != nil {
		return a, err
	}
	if a.Label == "" || a.Fingerprint == "" || a.TTLMS <= 0 || a.BusyTimeoutMS < 0 {
		return a, errors.New("-label, -fingerprint and a positive -ttl-ms are required")
	}
	if a.FallbackSQL != "" && a.ClaimSQL == "" {
		return a, errors.New("-fallback-sql is given without -claim-sql")
	}
	return a, nil
}

// statements are the user's statements this member was given.
func (a PoolArgs) statements() Statements {
	return Statements{Claim: a.ClaimSQL, Fallback: a.FallbackSQL}
}

// variant checks a request's variant: User only for a member given the
// user's statement.
func (a PoolArgs) variant(v Variant) (Variant, error) {
	if v != User {
		return ParseVariant(string(v))
	}
	if a.ClaimSQL == "" {
		return "", fmt.Errorf("variant %q, but this member was given no -claim-sql", v)
	}
	return v, nil
}

// ClaimerArgs are what both one-shot claim workers take: the file, the
// claim, the event, and the descriptor to signal readiness on (0: none).
type ClaimerArgs struct {
	DB            string
	Variant       Variant
	TTLMS         int64
	BusyTimeoutMS int64
	ReadyFD       int
	Event         Event
	// Backend is empty for SQLite; DB is then a connection string.
	Backend string
}

func (a ClaimerArgs) argv() []string {
	return store.BackendArgv([]string{
		"-db", a.DB, "-variant", string(a.Variant), "-ttl-ms", fmt.Sprint(a.TTLMS), "-busy-timeout-ms", fmt.Sprint(a.BusyTimeoutMS),
		"-ready-fd", strconv.Itoa(a.ReadyFD), "-fingerprint", a.Event.Fingerprint, "-source", a.Event.Source,
		"-level", a.Event.Level, "-message", a.Event.Message, "-event-time-ms", fmt.Sprint(a.Event.Time),
	}, a.Backend)
}

// bind declares the flags on fs and returns the check to run after
// fs.Parse.
func (a *ClaimerArgs) bind(fs *flag.FlagSet) func() error {
	variant := fs.String("variant", "", "claim variant")
	fs.StringVar(&a.DB, "db", "", "database file")
	fs.Int64Var(&a.TTLMS, "ttl-ms", 0, "claim TTL in milliseconds")
	fs.Int64Var(&a.BusyTimeoutMS, "busy-timeout-ms", 5000, "SQLite busy timeout in milliseconds")
	fs.IntVar(&a.ReadyFD, "ready-fd", 0, "inherited file descriptor to signal readiness on; 0 means none")
	fs.StringVar(&a.Event.Fingerprint, "fingerprint", "", "event fingerprint")
	fs.StringVar(&a.Event.Source, "source", "", "event source")
	fs.StringVar(&a.Event.Level, "level", "", "event level")
	fs.StringVar(&a.Event.Message, "message", "", "event message")
	fs.Int64Var(&a.Event.Time, "event-time-ms", 0, "the caller's event timestamp, Unix milliseconds")
	backend := store.BindBackend(fs, &a.Backend)
	return func() error {
		if err := backend(); err != nil {
			return err
		}
		v, err := ParseVariant(*variant)
		if err != nil {
			return err
		}
		a.Variant = v
		switch {
		case a.DB == "" || a.Event.Fingerprint == "":
			return errors.New("-db and -fingerprint are required")
		case a.TTLMS <= 0:
			return errors.New("-ttl-ms must be positive")
		case a.BusyTimeoutMS < 0:
			return errors.New("-busy-timeout-ms must not be negative")
		}
		return nil
	}
}

// RaceArgs are the arguments of "claim.race". NowMS is NoPin for the
// worker's own clock shifted by ClockOffsetMS.
type RaceArgs struct {
	ClaimerArgs
	Label          string
	ClockOffsetMS  int64
	NowMS          int64
	FollowUp       bool
	Classification string
}

// Argv is the racer's command line after the worker name.
func (a RaceArgs) Argv() []string {
	return append(a.ClaimerArgs.argv(), "-label", a.Label, "-clock-offset-ms", fmt.Sprint(a.ClockOffsetMS),
		"-now-ms", fmt.Sprint(a.NowMS), "-follow-up="+strconv.FormatBool(a.FollowUp), "-classification", a.Classification)
}

// ParseRaceArgs reads the command line RaceArgs.Argv renders.
func ParseRaceArgs(argv []string) (RaceArgs, error) {
	var a RaceArgs
	fs := newFlagSet(RaceWorker)
	check := a.ClaimerArgs.bind(fs)
	fs.StringVar(&a.Label, "label", "", "this racer's name")
	fs.Int64Var(&a.ClockOffsetMS, "clock-offset-ms", 0, "added to the worker's clock")
	fs.Int64Var(&a.NowMS, "now-ms", NoPin, "pin the clock to this instant; -1 means the real clock")
	fs.BoolVar(&a.FollowUp, "follow-up", false, "the winner writes the downstream fields")
	fs.StringVar(&a.Classification, "classification", "", "classification the winner's follow-up writes")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := check(); err != nil {
		return a, err
	}
	if a.Label == "" {
		return a, errors.New("-label is required")
	}
	return a, nil
}

// BenchArgs are the arguments of "claim.bench": Count fingerprints, each
// the event's fingerprint with a numbered suffix.
type BenchArgs struct {
	ClaimerArgs
	Count int
}

// Argv is the benchmark worker's command line after the worker name.
func (a BenchArgs) Argv() []string {
	return append(a.ClaimerArgs.argv(), "-count", strconv.Itoa(a.Count))
}

// ParseBenchArgs reads the command line BenchArgs.Argv renders.
func ParseBenchArgs(argv []string) (BenchArgs, error) {
	var a BenchArgs
	fs := newFlagSet(BenchWorker)
	check := a.ClaimerArgs.bind(fs)
	fs.IntVar(&a.Count, "count", 0, "number of fingerprints to claim")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := check(); err != nil {
		return a, err
	}
	if a.Count <= 0 {
		return a, errors.New("-count must be positive")
	}
	return a, nil
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
