// Package claim reproduces article 003: N real worker processes released
// together race to claim one event fingerprint in a SQLite file, with the
// legacy one-time claim (ON CONFLICT DO NOTHING) and with the TTL
// conditional upsert, round after round, and then the same rounds against
// the article's five deliberate bugs, each of which must be caught.
//
// The racers are a pool of long-lived worker processes that serve every
// race; each race is among distinct members, each on its own connection to
// the race's file, released together behind a barrier. Run only records;
// Fold derives every figure from the records.
package claim

import (
	"encoding/json"
	"errors"
	"fmt"
	"idemlab/worker/protocol"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "claim"

// DBName is the database file's name inside each round's folder.
const DBName = "claims.sqlite3"

// PoolCondition is the condition every pool member is recorded under: a
// member serves races of every condition.
const PoolCondition = "racer-pool"

// Limits of the input, shared by input.json and the flags.
const (
	MinWorkers = 2
	MaxWorkers = 64
	MaxReps    = 1000
	// MinTTLSeconds keeps half a TTL of margin far above the time a race
	// takes, which the rounds rely on.
	MinTTLSeconds = 10
)

// Flag names.
const (
	FlagWorkers           = "workers"
	FlagRepetitions       = "repetitions"
	FlagMutantRepetitions = "mutant-repetitions"
	FlagMutants           = "mutants"
)

// Input is the claim section of input.json.
type Input struct {
	// Fingerprint is the claimed event's fingerprint, the claim's key.
	Fingerprint string `json:"fingerprint"`
	// Source is the claimed event's source.
	Source string `json:"source"`
	// Level is the claimed event's level.
	Level string `json:"level"`
	// Message is the claimed event's message.
	Message string `json:"message"`
	// Classification is the downstream field a winner writes.
	Classification string `json:"classification"`
	// TTLSeconds is the claim TTL, equal to the cache TTL in front of it,
	// [MinTTLSeconds] s to a year.
	TTLSeconds int `json:"ttl_seconds"`
	// Workers is the number of racing processes per race B, [MinWorkers]
	// to [MaxWorkers].
	Workers int `json:"workers"`
	// Repetitions is how often every round of the two claims is raced,
	// 1 to [MaxReps]; the outcome must hold in every repetition.
	Repetitions int `json:"repetitions"`
	// MutantRepetitions is how often every round is raced per mutant. A
	// mutant needs one failing round to be caught, so it may be lower;
	// 1 to [MaxReps].
	MutantRepetitions int `json:"mutant_repetitions"`
	// BusyTimeoutMS is SQLite's busy_timeout of every racer's connection,
	// 100 to 600000 ms.
	BusyTimeoutMS int `json:"busy_timeout_ms"`
}

// Validate names the first bad field.
func (in Input) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"fingerprint", in.Fingerprint}, {"source", in.Source}, {"level", in.Level},
		{"message", in.Message}, {"classification", in.Classification},
	} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("claim.%s: must not be empty", f.name)
		}
		if err := protocol.CheckFields("claim", f.name, f.v); err != nil {
			return err
		}
	}
	if in.TTLSeconds < MinTTLSeconds || in.TTLSeconds > 365*24*3600 {
		return fmt.Errorf("claim.ttl_seconds: %d, want %d to %d (the rounds keep half a TTL of margin around a race)", in.TTLSeconds, MinTTLSeconds, 365*24*3600)
	}
	if err := checkRange("claim.workers", in.Workers, MinWorkers, MaxWorkers); err != nil {
		return err
	}
	if err := checkRange("claim.repetitions", in.Repetitions, 1, MaxReps); err != nil {
		return err
	}
	if err := checkRange("claim.mutant_repetitions", in.MutantRepetitions, 1, MaxReps); err != nil {
		return err
	}
	return checkRange("claim.busy_timeout_ms", in.BusyTimeoutMS, 100, 600000)
}

func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s: %d, want %d to %d", name, v, lo, hi)
	}
	return nil
}

// Settings are recorded with the scenario. Everything here is derived
// from the input section and the overrides; verify derives it again.
type Settings struct {
	Fingerprint    string `json:"fingerprint"`
	Source         string `json:"source"`
	Level          string `json:"level"`
	Message        string `json:"message"`
	Classification string `json:"classification"`
	TTLMS          int64  `json:"ttl_ms"`
	Workers        int    `json:"workers"`
	Repetitions    int    `json:"repetitions"`
	Mutants        bool   `json:"mutants"`
	// MutantRepetitions is 0 when the mutant table is not run.
	MutantRepetitions int `json:"mutant_repetitions"`
	// Claims are the two claims under test; MutantVariants the mutants run.
	Claims         []wc.Variant `json:"claims"`
	MutantVariants []wc.Variant `json:"mutant_variants"`
	Boundary       wc.Boundary  `json:"boundary"`
	BoundaryReason string       `json:"boundary_reason"`
	Clock          string       `json:"clock"`
	Barrier        string       `json:"barrier"`
	Rounds         []Round      `json:"rounds"`
	// SQLite is what every racer's connection must read back, on SQLite.
	SQLite sqlitedb.Settings `json:"sqlite,omitzero"`
	// Backend is empty for SQLite; on PostgreSQL it is postgres, and
	// Postgres is what every racer's session must read back.
	Backend  string             `json:"backend,omitempty"`
	Postgres *store.PGRequested `json:"postgres,omitempty"`
	// PoolWorker and PoolSize say which processes serve the races.
	PoolWorker string `json:"pool_worker"`
	PoolSize   int    `json:"pool_size"`
	// User is the user's own statement (--claim-sql), which runs in place
	// of the two shipped claims; nil for the article's run.
	User *UserClaim `json:"user_claim,omitempty"`
	// NotRun are the conditions these settings cannot run, with why.
	NotRun []NotRun `json:"not_run,omitempty"`
}

// BoundaryReason is recorded next to the choice.
const BoundaryReason = "a claim taken at T holds through T+ttl inclusive: at the exact boundary the first holder may still be working, and a tie falls on the side of fewer winners, since a second winner is the duplicate downstream work the claim prevents; the cost is 1 ms of extra wait; it is also the article's SQL"

// Scenario is the claim scenario, written against its own settings; New
// adapts it for the registry.
type Scenario struct{}

var _ scenario.Typed[Settings, Extra] = Scenario{}

// New is the scenario as the registry takes it.
func New() scenario.Scenario { return scenario.Define[Settings, Extra](Scenario{}) }

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "article 003: one-time claim vs TTL upsert, real racing processes, five mutants caught"
}

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: FlagWorkers, Usage: fmt.Sprintf("claim: racing processes per race (%d to %d)", MinWorkers, MaxWorkers)},
		{Name: FlagRepetitions, Usage: fmt.Sprintf("claim: repetitions of every round (1 to %d)", MaxReps)},
		{Name: FlagMutantRepetitions, Usage: fmt.Sprintf("claim: repetitions of every round per mutant (1 to %d)", MaxReps)},
		{Name: FlagMutants, Usage: "claim: run the mutant table (--mutants=false leaves it out)", Bool: true},
		{Name: FlagClaimSQL, Usage: "claim: a file with your own claim statement on event_claims, run through every round in place of the shipped claims"},
		{Name: FlagClaimFallbackSQL, Usage: "claim: a file with the statement your claim falls back to on the old schema (runs round 7)"},
	}
}

// Caps: every run has it, on SQLite and on PostgreSQL; a claim pool
// member is dear, because it lives through every race.
func (Scenario) Caps() scenario.Caps {
	return scenario.Caps{Backends: []string{store.BackendPostgres}, Cost: 700 * time.Millisecond}
}

// Validate is the settings' own (Settings.Validate).
func (Scenario) Validate(st Settings) error { return st.Validate() }

// Check: a condition passes when its figures equal the oracle's.
func (Scenario) Check(_ string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(expected, observed)
}

// planOn decodes the section, applies the flags but the statement files'
// and derives the settings for a run on backend b. On PostgreSQL every
// round and every mutant runs unchanged: each racer claims on its own
// session, with the run's isolation level. Plan (user.go) reads the
// user's statements.
func planOn(b backend.Spec, section json.RawMessage, ov map[string]string) (*plan, error) {
	var in Input
	if err := scenario.DecodeSection(Name, section, &in); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if v, ok, err := scenario.IntFlag(ov, FlagWorkers, MinWorkers, MaxWorkers); err != nil {
		return nil, err
	} else if ok {
		in.Workers = v
	}
	if v, ok, err := scenario.IntFlag(ov, FlagRepetitions, 1, MaxReps); err != nil {
		return nil, err
	} else if ok {
		in.Repetitions = v
	}
	if v, ok, err := scenario.IntFlag(ov, FlagMutantRepetitions, 1, MaxReps); err != nil {
		return nil, err
	} else if ok {
		in.MutantRepetitions = v
	}
	mutants := true
	if v, ok, err := scenario.BoolFlag(ov, FlagMutants); err != nil {
		return nil, err
	} else if ok {
		mutants = v
	}
	if _, given := ov[FlagMutantRepetitions]; given && !mutants {
		return nil, fmt.Errorf("--%s: given with --%s=false, which runs no mutant", FlagMutantRepetitions, FlagMutants)
	}
	st := Derive(in, mutants)
	if !b.IsSQLite() {
		st.SQLite, st.Backend, st.Postgres = sqlitedb.Settings{}, b.Name, b.Requested()
	}
	return &plan{s: st}, nil
}

// Derive is the settings an input and the mutant choice imply.
func Derive(in Input, mutants bool) Settings {
	ttl := time.Duration(in.TTLSeconds) * time.Second
	s := Settings{
		Fingerprint: in.Fingerprint, Source: in.Source, Level: in.Level, Message: in.Message,
		Classification: in.Classification, TTLMS: ttl.Milliseconds(),
		Workers: in.Workers, Repetitions: in.Repetitions, Mutants: mutants,
		Claims: append([]wc.Variant{}, wc.Claims...), MutantVariants: []wc.Variant{},
		Boundary: wc.Chosen, BoundaryReason: BoundaryReason,
		Clock:      "each racer's own clock (Unix ms) plus the race's offset; the boundary rounds pin it to the exact instant instead",
		Barrier:    fmt.Sprintf("a pool of %d long-lived racer processes; per race each member opens its own connection to the round's file and answers ready, then all block reading one byte from one shared pipe, which the parent fills with one write of one byte per racer", in.Workers),
		Rounds:     Rounds(ttl),
		SQLite:     wc.RequestedSQLite(in.BusyTimeoutMS),
		PoolWorker: wc.PoolWorker, PoolSize: in.Workers,
	}
	if mutants {
		s.MutantRepetitions = in.MutantRepetitions
		s.MutantVariants = append(s.MutantVariants, wc.Mutants...)
	}
	return s
}

// PoolArgs are the arguments of the member labelled label: what every
// race it serves shares. The run renders them and the fold renders them
// again to check each member's recorded command line.
func (s Settings) PoolArgs(label string) wc.PoolArgs {
	return wc.PoolArgs{
		Label: label, Fingerprint: s.Fingerprint, Source: s.Source, Level: s.Level, Message: s.Message,
		Classification: s.Classification, TTLMS: s.TTLMS, BusyTimeoutMS: int64(s.SQLite.BusyTimeoutMS),
		ClaimSQL: s.User.claimSQL(), FallbackSQL: s.User.fallbackSQL(),
		Backend: s.Backend,
	}
}

// backendName is the backend the settings run on, as store names it.
func (s Settings) backendName() string {
	b, _ := store.ParseBackend(s.Backend)
	return b
}

// ReadCommitted says whether the run is on PostgreSQL under READ
// COMMITTED, where the oracle also says that no racer meets a
// serialization failure or a deadlock.
func (s Settings) ReadCommitted() bool {
	if s.Postgres == nil {
		return false
	}
	l, _ := s.Postgres.Level()
	return l == store.ReadCommitted
}

// MemberLabel names pool member i.
func MemberLabel(i int) string { return fmt.Sprintf("pool-%d", i+1) }

// RacerLabel names the racer in a slot of a race; a winner's follow-up
// writes it into external_id, so the row names who did the work.
func RacerLabel(race, slot int) string { return fmt.Sprintf("race%d-slot%d", race, slot) }

// RoundCondition is the name of a round's condition for one variant.
func RoundCondition(roundID string, v wc.Variant) string { return roundID + "/" + string(v) }

// MutantCondition is the name of a mutant's condition.
func MutantCondition(m wc.Variant) string { return "mutants/" + string(m) }

// Params are the inputs of the oracle besides the claim and the round.
type Params struct {
	Workers        int
	TTLMS          int64
	Classification string
	// ReadCommitted is a run on PostgreSQL under READ COMMITTED.
	ReadCommitted bool
}

func (s Settings) params() Params {
	return Params{Workers: s.Workers, TTLMS: s.TTLMS, Classification: s.Classification, ReadCommitted: s.ReadCommitted()}
}

// Validate refuses recorded values out of the ranges the input allows, so
// a hand-edited file cannot make the fold or the oracle allocate without
// bound; scenario.Define calls it right after decoding.
func (st Settings) Validate() error {
	switch {
	case st.Workers < MinWorkers || st.Workers > MaxWorkers:
		return fmt.Errorf("workers: %d, want %d to %d", st.Workers, MinWorkers, MaxWorkers)
	case st.PoolSize != st.Workers:
		return fmt.Errorf("pool_size: %d, but workers is %d; the pool has one member per racer", st.PoolSize, st.Workers)
	case st.Repetitions < 1 || st.Repetitions > MaxReps:
		return fmt.Errorf("repetitions: %d, want 1 to %d", st.Repetitions, MaxReps)
	case st.Mutants && (st.MutantRepetitions < 1 || st.MutantRepetitions > MaxReps):
		return fmt.Errorf("mutant_repetitions: %d, want 1 to %d", st.MutantRepetitions, MaxReps)
	case !st.Mutants && (st.MutantRepetitions != 0 || len(st.MutantVariants) != 0):
		return errors.New("mutant_repetitions and mutant_variants: set, but mutants is false")
	case st.TTLMS < MinTTLSeconds*1000:
		return fmt.Errorf("ttl_ms: %d, want at least %d", st.TTLMS, MinTTLSeconds*1000)
	case st.Boundary != wc.Chosen:
		return fmt.Errorf("boundary: %q, but the TTL claim is built with %q", st.Boundary, wc.Chosen)
	}
	for i, v := range append(append([]wc.Variant{}, st.Claims...), st.MutantVariants...) {
		if v == wc.User && st.User != nil {
			continue
		}
		if _, err := wc.ParseVariant(string(v)); err != nil {
			return fmt.Errorf("claims or mutant_variants[%d]: %w", i, err)
		}
	}
	return st.validateUser()
}
