// Package claim reproduces article 003: N real worker processes released
// together race to claim one event fingerprint in a SQLite file, with the
// legacy one-time claim (ON CONFLICT DO NOTHING) and with the TTL
// conditional upsert, round after round, and then the same rounds against
// the article's five deliberate bugs, each of which must be caught.
package claim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"idemlab/experiments/harness"
	wc "idemlab/worker/claim"
	"idemlab/worker/sqlitedb"
)

// Name is the scenario's name on the command line.
const Name = "claim"

// Workers are the registry names of the claim workers.
const (
	RaceWorker  = "claim.race"
	BenchWorker = "claim.bench"
)

// Limits of the input, shared by input.json and the flags.
const (
	MinWorkers = 2
	MaxWorkers = 64
	MaxReps    = 1000
	// MinTTLSeconds keeps half a TTL of margin far above the time a race
	// takes, which the rounds rely on.
	MinTTLSeconds = 10
)

// Input is the claim section of input.json.
type Input struct {
	Fingerprint    string `json:"fingerprint"`
	Source         string `json:"source"`
	Level          string `json:"level"`
	Message        string `json:"message"`
	Classification string `json:"classification"`
	// TTLSeconds is the claim TTL, equal to the cache TTL in front of it.
	TTLSeconds int `json:"ttl_seconds"`
	// Workers is the number of racing processes.
	Workers int `json:"workers"`
	// Repetitions is how often every round of the two claims is raced.
	Repetitions int `json:"repetitions"`
	// MutantRepetitions is how often every round is raced per mutant. A
	// mutant needs one failing round to be caught, and the mutant table
	// multiplies the process count by five, so it may be lower.
	MutantRepetitions int `json:"mutant_repetitions"`
	BusyTimeoutMS     int `json:"busy_timeout_ms"`
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

// Overrides are the experiment command's claim flags. Zero values keep
// input.json's setting.
type Overrides struct {
	Workers           int
	Repetitions       int
	MutantRepetitions int
	// SkipMutants leaves the mutant table out (--mutants=false).
	SkipMutants bool
}

// Validate names the first bad flag.
func (o Overrides) Validate() error {
	checks := []struct {
		flag      string
		v, lo, hi int
	}{
		{"--workers", o.Workers, MinWorkers, MaxWorkers},
		{"--repetitions", o.Repetitions, 1, MaxReps},
		{"--mutant-repetitions", o.MutantRepetitions, 1, MaxReps},
	}
	for _, c := range checks {
		if c.v != 0 {
			if err := checkRange(c.flag, c.v, c.lo, c.hi); err != nil {
				return err
			}
		}
	}
	return nil
}

// With applies the overrides.
func (in Input) With(o Overrides) Input {
	if o.Workers != 0 {
		in.Workers = o.Workers
	}
	if o.Repetitions != 0 {
		in.Repetitions = o.Repetitions
	}
	if o.MutantRepetitions != 0 {
		in.MutantRepetitions = o.MutantRepetitions
	}
	return in
}

// Config is everything one run needs.
type Config struct {
	Runner   *harness.Runner
	Recorder *harness.Recorder
	Input    Input
	// Mutants runs the mutant table after the two claims.
	Mutants bool
	// Rounds defaults to Rounds(ttl); tests run a subset.
	Rounds []Round
	// Oracle defaults to Expect. Tests replace it to show that a wrong
	// expectation fails the run.
	Oracle Oracle
	// TempDir is where the per-round database folders are made; empty means
	// the system default.
	TempDir string
}

// Result is the scenario's entry in results.json.
type Result = harness.ScenarioResult

// Settings are recorded with the scenario.
type Settings struct {
	Fingerprint string `json:"fingerprint"`
	// Classification is what a follow-up writes; the oracle needs it to
	// name the row's downstream field, so verify can recompute expected.
	Classification    string            `json:"classification"`
	TTLMS             int64             `json:"ttl_ms"`
	Workers           int               `json:"workers"`
	Repetitions       int               `json:"repetitions"`
	MutantRepetitions int               `json:"mutant_repetitions,omitempty"`
	Mutants           bool              `json:"mutants"`
	Boundary          wc.Boundary       `json:"boundary"`
	BoundaryReason    string            `json:"boundary_reason"`
	Clock             string            `json:"clock"`
	Barrier           string            `json:"barrier"`
	Rounds            []Round           `json:"rounds"`
	SQLite            sqlitedb.Settings `json:"sqlite"`
}

// BoundaryReason is recorded in results.json next to the choice.
const BoundaryReason = "a claim taken at T holds through T+ttl inclusive: at the exact boundary the first holder may still be working, and a tie falls on the side of fewer winners, since a second winner is the duplicate downstream work the claim prevents; the cost is 1 ms of extra wait; it is also the article's SQL"

// Extra is the scenario's extra table in results.json.
type Extra struct {
	// BusyRetries is the total SQLITE_BUSY retries per condition.
	BusyRetries map[string]int `json:"busy_retries"`
	// Mutants is the mutant table; nil when it was not run.
	Mutants *MutantTable `json:"mutants,omitempty"`
}

// MutantTable records, per mutant, which rounds caught it.
type MutantTable struct {
	Repetitions int `json:"repetitions"`
	// Oracle says what each mutant is checked against.
	Oracle string      `json:"oracle"`
	Rows   []MutantRow `json:"rows"`
}

// MutantRow is one mutant.
type MutantRow struct {
	Mutant   wc.Variant `json:"mutant"`
	Killed   bool       `json:"killed"`
	KilledBy []string   `json:"killed_by"`
	Survived []string   `json:"survived"`
	// Diffs are go-cmp's reports (-expected +observed) of the killing
	// rounds.
	Diffs map[string]string `json:"diffs"`
}

// MutantVerdict is a mutant's condition: it must be killed.
type MutantVerdict struct {
	Killed bool `json:"killed"`
}

// RoundCondition is the name of a claim's condition.
func RoundCondition(roundID string, kind wc.Variant) string { return roundID + "/" + string(kind) }

// MutantCondition is the name of a mutant's condition.
func MutantCondition(m wc.Variant) string { return "mutants/" + string(m) }

// Conditions lists every condition a default run produces.
func Conditions() []string {
	var out []string
	for _, r := range Rounds(MinTTLSeconds * time.Second) {
		for _, k := range r.Kinds {
			out = append(out, RoundCondition(r.ID, k))
		}
	}
	for _, m := range wc.Mutants {
		out = append(out, MutantCondition(m))
	}
	return out
}

// Run races every round of both claims, then, if asked, of every mutant,
// and compares each with the oracle.
func Run(ctx context.Context, cfg Config) (Result, error) {
	in := cfg.Input
	ttl := time.Duration(in.TTLSeconds) * time.Second
	rounds := cfg.Rounds
	if rounds == nil {
		rounds = Rounds(ttl)
	}
	oracle := cfg.Oracle
	if oracle == nil {
		oracle = Expect
	}
	params := Params{Workers: in.Workers, TTLMS: ttl.Milliseconds(), Classification: in.Classification}
	res := Result{Name: Name, Pass: true}
	settings := Settings{
		Fingerprint: in.Fingerprint, Classification: in.Classification, TTLMS: ttl.Milliseconds(), Workers: in.Workers, Repetitions: in.Repetitions,
		Mutants: cfg.Mutants, Boundary: wc.Chosen, BoundaryReason: BoundaryReason,
		Clock:   "each worker's own clock (Unix ms) plus the race's offset; the boundary rounds pin it to the exact instant instead",
		Barrier: "every racer opens the database, writes one byte to an inherited pipe, then reads stdin until the parent closes it",
		Rounds:  rounds,
	}
	extra := Extra{BusyRetries: map[string]int{}}
	for _, r := range rounds {
		for _, kind := range []wc.Variant{wc.Legacy, wc.TTL} {
			if !r.hasKind(kind) {
				continue
			}
			name := RoundCondition(r.ID, kind)
			observed, stats, err := runRound(ctx, cfg, name, kind, r, in.Repetitions)
			if err != nil {
				return res, err
			}
			settings.SQLite = stats.settings
			extra.BusyRetries[name] = stats.busy
			expected := ExpectedGroups(oracle(kind, r, wc.Chosen, params), in.Repetitions)
			pass, diff := Check(expected, observed)
			res.Conditions = append(res.Conditions, harness.ConditionResult{
				Name: name, Expected: expected, Observed: observed, Pass: pass, Diff: diff,
			})
			res.Pass = res.Pass && pass
		}
	}
	if cfg.Mutants {
		settings.MutantRepetitions = in.MutantRepetitions
		table := &MutantTable{Repetitions: in.MutantRepetitions, Oracle: fmt.Sprintf("the oracle of the %s claim with boundary %q", wc.TTL, wc.Chosen)}
		for _, m := range wc.Mutants {
			row := MutantRow{Mutant: m, KilledBy: []string{}, Survived: []string{}, Diffs: map[string]string{}}
			for _, r := range rounds {
				if !r.hasKind(wc.TTL) {
					continue
				}
				name := RoundCondition(r.ID, m)
				observed, stats, err := runRound(ctx, cfg, name, m, r, in.MutantRepetitions)
				if err != nil {
					return res, err
				}
				extra.BusyRetries[name] = stats.busy
				expected := ExpectedGroups(oracle(wc.TTL, r, wc.Chosen, params), in.MutantRepetitions)
				if pass, diff := Check(expected, observed); pass {
					row.Survived = append(row.Survived, r.ID)
				} else {
					row.KilledBy = append(row.KilledBy, r.ID)
					row.Diffs[r.ID] = diff
				}
			}
			row.Killed = len(row.KilledBy) > 0
			table.Rows = append(table.Rows, row)
			c := harness.ConditionResult{
				Name: MutantCondition(m), Expected: MutantVerdict{Killed: true}, Observed: MutantVerdict{Killed: row.Killed},
				Pass: row.Killed,
			}
			if !c.Pass {
				c.Diff = fmt.Sprintf("mutant %s survived every round: %s\n", m, strings.Join(row.Survived, ", "))
			}
			res.Conditions = append(res.Conditions, c)
			res.Pass = res.Pass && c.Pass
		}
		extra.Mutants = table
	}
	res.Settings = settings
	res.Extra = extra
	return res, nil
}

type roundStats struct {
	busy     int
	settings sqlitedb.Settings
}

// Observation is one line of observations.jsonl: the claim row after a
// race and every racer's result.
type Observation struct {
	Scenario   string       `json:"scenario"`
	Condition  string       `json:"condition"`
	Variant    wc.Variant   `json:"variant"`
	Round      string       `json:"round"`
	Repetition int          `json:"repetition"`
	Race       Race         `json:"race"`
	BaseMS     int64        `json:"base_ms"`
	EventMS    int64        `json:"event_ms"`
	Racers     []RacerEntry `json:"racers"`
	Row        *wc.Row      `json:"row"`
	Outcome    RaceOutcome  `json:"outcome"`
}

// RacerEntry is one racer's result and its process id in
// raw-processes.jsonl.
type RacerEntry struct {
	ProcessID int           `json:"process_id"`
	Result    wc.RaceResult `json:"result"`
}

func runRound(ctx context.Context, cfg Config, name string, kind wc.Variant, r Round, reps int) ([]Group, roundStats, error) {
	var stats roundStats
	perRep := make([][]RaceOutcome, 0, reps)
	for rep := 1; rep <= reps; rep++ {
		out, err := runRepetition(ctx, cfg, name, kind, r, rep, &stats)
		if err != nil {
			return nil, stats, err
		}
		perRep = append(perRep, out)
	}
	return GroupOutcomes(perRep), stats, nil
}

func runRepetition(ctx context.Context, cfg Config, name string, kind wc.Variant, r Round, rep int, stats *roundStats) ([]RaceOutcome, error) {
	in := cfg.Input
	busy := time.Duration(in.BusyTimeoutMS) * time.Millisecond
	ttlMS := int64(in.TTLSeconds) * 1000
	dir, err := os.MkdirTemp(cfg.TempDir, "idemlab-claim-")
	if err != nil {
		return nil, fmt.Errorf("%w: create database folder: %v", harness.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "claims.sqlite3")
	if err := prepare(ctx, dbPath, busy, r.Schema); err != nil {
		return nil, fmt.Errorf("%w: %s repetition %d: %v", harness.ErrHarness, name, rep, err)
	}
	base := time.Now().UnixMilli()
	lastStart := int64(0)
	var marks []RaceMarks
	var outcomes []RaceOutcome
	for _, race := range r.Races {
		by := kind
		if race.By != "" {
			by = race.By
		}
		// Honest callers stamp the event with the race's own start, kept
		// strictly increasing so that each race's timestamp is its own.
		start := max(time.Now().UnixMilli(), lastStart+1)
		lastStart = start
		if race.Pinned {
			start = base
		}
		event := start + race.CallerMS
		clockArgs := []string{"-clock-offset-ms", fmt.Sprint(race.ClockMS)}
		if race.Pinned {
			clockArgs = []string{"-now-ms", fmt.Sprint(base + race.ClockMS)}
		}
		label := func(i int) string { return fmt.Sprintf("r%d-%s-w%d", rep, race.Name, i+1) }
		n := race.Racers(in.Workers)
		procs, err := RunRace(ctx, cfg.Runner, RaceSpec{
			Scenario: Name, Condition: name, Worker: RaceWorker, Workers: n, Label: label,
			Args: func(i int) []string {
				args := []string{
					"-db", dbPath, "-variant", string(by), "-label", label(i),
					"-fingerprint", in.Fingerprint, "-source", in.Source, "-level", in.Level, "-message", in.Message,
					"-event-time-ms", fmt.Sprint(event), "-ttl-ms", fmt.Sprint(ttlMS),
					"-busy-timeout-ms", fmt.Sprint(in.BusyTimeoutMS),
				}
				if race.FollowUp {
					args = append(args, "-follow-up", "-classification", in.Classification)
				}
				return append(args, clockArgs...)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("%s repetition %d race %s: %w", name, rep, race.Name, err)
		}
		o := RaceOutcome{Race: race.Name, Workers: n, Paths: map[wc.Path]int{}}
		m := RaceMarks{Name: race.Name, EventMS: event}
		var racers []RacerEntry
		for _, p := range procs {
			var rr wc.RaceResult
			if err := harness.DecodeResult(p.Report, &rr); err != nil {
				return nil, fmt.Errorf("%w: %s repetition %d race %s: %v", harness.ErrHarness, name, rep, race.Name, err)
			}
			racers = append(racers, RacerEntry{ProcessID: p.Record.ID, Result: rr})
			o.Paths[rr.Outcome.Path]++
			stats.busy += rr.BusyRetries
			stats.settings = rr.Settings
			if rr.Outcome.Won {
				o.Winners++
				m.WinnerNows = append(m.WinnerNows, rr.Outcome.NowMS)
				if rr.FollowedUp {
					m.ExternalIDs = append(m.ExternalIDs, rr.ExternalID)
				}
			}
		}
		marks = append(marks, m)
		row, err := readRow(ctx, dbPath, busy, in.Fingerprint)
		if err != nil {
			return nil, fmt.Errorf("%w: %s repetition %d race %s: %v", harness.ErrHarness, name, rep, race.Name, err)
		}
		o.Row = Summarize(row, r.Schema == wc.SchemaNew, marks)
		outcomes = append(outcomes, o)
		if err := cfg.Recorder.Observe(Observation{
			Scenario: Name, Condition: name, Variant: by, Round: r.ID, Repetition: rep, Race: race,
			BaseMS: base, EventMS: event, Racers: racers, Row: row, Outcome: o,
		}); err != nil {
			return nil, fmt.Errorf("%w: record observation: %v", harness.ErrHarness, err)
		}
	}
	return outcomes, nil
}

// prepare creates the round's file in WAL mode with the round's layout,
// before any racer opens it.
func prepare(ctx context.Context, path string, busy time.Duration, v wc.SchemaVersion) error {
	db, _, err := sqlitedb.Open(ctx, wc.Options(path, busy))
	if err != nil {
		return err
	}
	if err := wc.CreateSchema(ctx, db, v); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

func readRow(ctx context.Context, path string, busy time.Duration, fingerprint string) (*wc.Row, error) {
	db, _, err := sqlitedb.Open(ctx, wc.Options(path, busy))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	row, ok, err := wc.ReadRow(ctx, db, fingerprint)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	return &row, nil
}
