// Package explore looks for the crashes that break idempotency instead of
// testing the few the article names. For each pattern it discovers the
// crash points a normal delivery passes, crashes a delivery at every one
// of them, crashes at a seeded k-th point, kills the worker after a seeded
// delay, and races several workers on one event; after each, a fresh
// process redelivers the event and pure invariants judge the history.
//
// Point and k trials replay exactly from the seed. Kills and races depend
// on how the OS schedules the processes and cannot be replayed; their
// conditions are named "timing-…" and their figures sit under "timing"
// keys, which verify --rerun leaves out of its comparison.
package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"idemlab/worker/protocol"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/pattern"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/experiments/subject/deliver"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "explore"

// DBName is each trial's database file name.
const DBName = "events.sqlite3"

// Limits on the input, so a typo cannot start a week-long run.
const (
	MaxTrials = 1_000_000
	MaxRounds = 100_000
	MaxRacers = 64
	// MaxItems keeps a batch sweep (two points per item) short.
	MaxItems = 50
)

// Input is the explore section of input.json.
type Input struct {
	// EventID is the redelivery patterns' event.
	EventID string `json:"event_id"`
	// JobKey is the redelivery patterns' follow-up job key.
	JobKey string `json:"job_key"`
	// Seed fixes every k and delay.
	Seed uint64 `json:"seed"`
	// Trials is the number of random trials per pattern: half crash at a
	// seeded k-th hit, half are killed after a seeded delay; 0 to
	// [MaxTrials]. The built-in subjects get a share of it.
	Trials int `json:"trials"`
	// Racers lists the numbers of concurrent workers per race, each 2 to
	// [MaxRacers], each once.
	Racers []int `json:"racers"`
	// Rounds is the number of races per pattern, racer count and kill
	// mode, 0 to [MaxRounds].
	Rounds int `json:"rounds"`
	// Parallel is how many trials and races run at once, 1 to
	// [scenario.MaxParallel]; 0 or absent leaves it to --parallel and the
	// machine: runtime.GOMAXPROCS, the CPUs the process may use (a Slurm
	// or Kubernetes slot's quota). The default input sets none.
	Parallel int `json:"parallel"`
	// MaxAttempts is how often a racer tries a delivery that met
	// SQLITE_BUSY, 1 to 100.
	MaxAttempts int `json:"max_attempts"`
	// Items is the batch patterns' item count, 1 to [MaxItems]; each adds
	// two crash points.
	Items int `json:"items"`
}

// Settings are recorded with the scenario; verify derives them again.
type Settings struct {
	EventID    string `json:"event_id"`
	JobKey     string `json:"job_key"`
	Seed       uint64 `json:"seed"`
	Trials     int    `json:"trials_per_pattern"`
	HitTrials  int    `json:"crash_after_hits_trials"`
	KillTrials int    `json:"kill_trials"`
	Racers     []int  `json:"racers"`
	Rounds     int    `json:"rounds"`
	// Parallel is what folders made before it moved out of the settings
	// recorded (results.ScenarioResult.Parallel); a run leaves it 0.
	Parallel    int `json:"parallel,omitempty"`
	MaxAttempts int `json:"max_attempts"`
	Items       int `json:"items"`
	// OnlyTrial, when 0 or more, runs that one index of every random
	// condition that has it, and no sweep or takeover, to replay a
	// violation alone; -1 runs them all.
	OnlyTrial int `json:"only_trial"`
	// Shard is the part of the trials this run runs (--shard); nil runs
	// them all. The discovery runs run in every part.
	Shard      *shard.Part      `json:"shard,omitempty"`
	Patterns   []PatternSetting `json:"patterns"`
	Conditions []Condition      `json:"conditions"`
	// SQLite is what every acknowledging worker must read back.
	SQLite sqlitedb.Settings `json:"sqlite"`
	// Backend is empty for SQLite; on PostgreSQL it is postgres, each
	// condition names its isolation level, and every session must read
	// back that level and SynchronousCommit. Isolations are the levels
	// the run covers; NotRun says, part by part, what explore runs on
	// SQLite alone and why.
	Backend           string   `json:"backend,omitempty"`
	SynchronousCommit string   `json:"synchronous_commit,omitempty"`
	Isolations        []string `json:"isolations,omitempty"`
	NotRun            []NotRun `json:"not_run,omitempty"`
	// Articles are the article patterns run from their files, as the
	// pattern scenario's settings (articles.go); absent in folders of
	// format 6 or older, whose Patterns name the hand-written workers,
	// and on PostgreSQL, which races the hand-written workers still.
	Articles []pattern.Settings `json:"articles,omitempty"`
	// Broker and BrokerURL are --broker and --broker-url: the article
	// files' deliveries go through the broker (each article settings'
	// Broker); OnBroker says what of the exploration does not, and why.
	Broker    string   `json:"broker,omitempty"`
	BrokerURL string   `json:"broker_url,omitempty"`
	OnBroker  []NotRun `json:"on_broker,omitempty"`
}

// NotRun is a part of the exploration a backend does not run, and why.
type NotRun struct {
	Part   string `json:"part"`
	Reason string `json:"reason"`
}

// PatternSetting is what the records depend on of a pattern.
type PatternSetting struct {
	Name       string `json:"name"`
	Worker     string `json:"worker"`
	Racer      string `json:"racer"`
	Window     Window `json:"window"`
	TrialShare int    `json:"trial_share"`
	Sends      bool   `json:"sends,omitempty"`
	Fenced     bool   `json:"fenced,omitempty"`
}

// settingOf is what the settings record of a registered pattern.
func settingOf(p Pattern) PatternSetting {
	return PatternSetting{Name: p.Name, Worker: p.Worker, Racer: p.Racer, Window: p.Window, TrialShare: p.TrialShare, Sends: p.Sends, Fenced: p.Fenced}
}

// Kinds of condition.
const (
	KindDiscovery = "discovery"
	KindSweep     = "sweep"
	KindHits      = "crash-after-hits"
	KindKill      = "timing-kill"
	KindRace      = "timing-race"
	// KindTakeover pauses a lease holder at each discovered point while a
	// successor takes over, then lets it run on: replayable, since the
	// parent orders the two, not the scheduler.
	KindTakeover = "takeover"
)

// class is the engine's fault class of the condition's kind, which the
// engine's registry spells (engine.Labels.Explore).
func (c Condition) class() engine.Kind {
	k, _ := engine.KindOf(engine.Explore, c.Kind)
	return k
}

// Condition is one kind of trial on one pattern.
type Condition struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Kind    string `json:"kind"`
	// Trials are the indices run; the sweep runs one per discovered point
	// and lists none here.
	Trials []int `json:"trials,omitempty"`
	Racers int   `json:"racers,omitempty"`
	Kills  bool  `json:"kills,omitempty"`
	// Unfenced runs a takeover with the fence off: unconditional journal
	// writes and a receiver that accepts any generation.
	Unfenced bool `json:"unfenced,omitempty"`
	// Isolation is the PostgreSQL isolation level every session of the
	// condition starts with, by its command-line name; empty on SQLite.
	Isolation string `json:"isolation,omitempty"`
}

// Timing reports whether a condition's outcomes depend on OS scheduling
// rather than the seed: its kind's engine class is scheduled (the kills
// after a delay and the races). The oracle records it
// (scenario.Expected.Scheduled).
func (c Condition) Timing() bool { return engine.Scheduled(c.class()) }

// Scenario is the explore scenario, written against its own settings
// (scenario.Define adapts it). A test replaces the oracle by embedding it
// in a type with its own Expect.
type Scenario struct {
	// Articles hold the article pattern files (ArticleDir) by their
	// paths from the module root.
	Articles fs.FS
}

// New is the scenario as the registry holds it, running its article
// patterns from the files in articles.
func New(articles fs.FS) scenario.Scenario {
	return scenario.Define[Settings, Extra](Scenario{Articles: articles})
}

func (Scenario) Name() string { return Name }

// Caps: opt-in, which keeps the exploration out of a run without
// --scenario: the default run reproduces the articles, and the
// exploration's thousands of short-lived workers are asked for by name.
// It runs on SQLite and, its races alone, on PostgreSQL.
func (Scenario) Caps() scenario.Caps {
	return scenario.Caps{OptIn: true, Backends: []string{store.BackendPostgres}, Cost: 15 * time.Millisecond}
}

// Validate: the settings have no limits beyond their JSON shape.
func (Scenario) Validate(Settings) error { return nil }

func (Scenario) Summary() string {
	return "crash-point sweep, seeded k-th-hit crashes and kills, and concurrent redelivery, judged by invariants"
}

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: "trials", Usage: "random trials per pattern, half crash at a seeded hit, half killed after a seeded delay"},
		{Name: "seed", Usage: "seed of every k and delay; the same seed replays the same schedule"},
		{Name: "rounds", Usage: "races per pattern, racer count and kill mode"},
		{Name: "only-trial", Usage: "run only this trial of each random condition that has it, no sweep or takeover, to replay one violation"},
		{Name: pattern.FlagBroker, Usage: "explore: who redelivers the article files' events, none (the harness, default) or nats (a JetStream server per trial, as the pattern scenario's --broker nats); the built-in subjects (batch, lease, the claim-ttl probe) run as without it and the input's races are left out, and the run says so; races asked for with --rounds are refused"},
		{Name: pattern.FlagBrokerURL, Usage: "explore, with --broker nats: a NATS server of your own for the article files' trials"},
		scenario.ShardFlag,
	}
}

// Plan plans the exploration on the request's backend: on SQLite
// (planSQLite), or its races alone on PostgreSQL (planPostgres).
func (sc Scenario) Plan(ctx context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	if req.Backend.IsSQLite() {
		p, err := sc.planSQLite(req.Section, req.Overrides)
		if err == nil {
			err = p.s.planBroker(req.Overrides)
		}
		if err != nil || p.s.OnlyTrial >= 0 {
			// A replay of one trial replays a built-in subject's; an
			// article file's trial replays with the pattern scenario.
			return p, err
		}
		p.s.Articles, err = articleSettings(ctx, sc.Articles, p.s, req.Backend)
		return p, err
	}
	if b := req.Overrides[pattern.FlagBroker]; b != "" && b != broker.None {
		return nil, fmt.Errorf("%w: --%s %s: explore on PostgreSQL runs the races alone, and a broker hands an event to one consumer at a time; run it on SQLite", errclass.ErrUsage, pattern.FlagBroker, b)
	}
	p, err := sc.planPostgres(req.Backend, req.Section, req.Overrides)
	if err != nil {
		return nil, err
	}
	p.s.Articles, err = articleSettings(ctx, sc.Articles, p.s, req.Backend)
	return p, err
}

// planSQLite decodes the section and applies the flags.
func (Scenario) planSQLite(section json.RawMessage, overrides map[string]string) (*plan, error) {
	var in Input
	if err := scenario.DecodeSection(Name, section, &in); err != nil {
		return nil, err
	}
	only := -1
	for _, f := range []struct {
		name string
		hi   int
		dst  *int
	}{{"trials", MaxTrials, &in.Trials}, {"rounds", MaxRounds, &in.Rounds}, {"only-trial", MaxTrials, &only}} {
		if v, ok, err := scenario.IntFlag(overrides, f.name, 0, f.hi); err != nil {
			return nil, err
		} else if ok {
			*f.dst = v
		}
	}
	if s, ok := overrides["seed"]; ok {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seed %q: want a whole number from 0 to %d", s, uint64(1<<64-1))
		}
		in.Seed = v
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := checkOnlyTrial(in, only); err != nil {
		return nil, err
	}
	part, err := scenario.ShardOverride(overrides)
	if err != nil {
		return nil, err
	}
	st := NewSettings(in, only)
	st.Shard = part
	return &plan{s: st, parallel: in.Parallel}, nil
}

// planPostgres plans the exploration on PostgreSQL: the concurrent deliveries
// alone, K racers released at once for every K of the input's racers and
// every pattern that races there, under every isolation level, or the one
// level the input's backend section or --isolation chose.
func (sc Scenario) planPostgres(b backend.Spec, section json.RawMessage, overrides map[string]string) (*plan, error) {
	for _, f := range []string{"trials", "only-trial", "shard"} {
		if _, ok := overrides[f]; ok {
			return nil, fmt.Errorf("--%s: explore on PostgreSQL runs its races alone, which are neither trials nor sharded; leave it out with --backend %s", f, b.Name)
		}
	}
	p, err := sc.planSQLite(section, overrides)
	if err != nil {
		return nil, err
	}
	return &plan{s: postgresSettings(p.s, b, b.Levels()), parallel: p.parallel}, nil
}

// postgresSettings turns SQLite's settings into PostgreSQL's: the
// patterns of sq that race there and their race conditions, one per level
// and K.
func postgresSettings(sq Settings, b backend.Spec, levels []string) Settings {
	st := sq
	st.Trials, st.HitTrials, st.KillTrials = 0, 0, 0
	st.MaxAttempts = PostgresMaxAttempts
	st.SQLite = sqlitedb.Settings{}
	st.Backend, st.SynchronousCommit = b.Name, b.SynchronousCommit
	st.Isolations = append([]string{}, levels...)
	st.NotRun = NotOnPostgres
	st.Patterns, st.Conditions = nil, nil
	rounds := make([]int, st.Rounds)
	for i := range rounds {
		rounds[i] = i
	}
	for _, ps := range sq.Patterns {
		p, _ := LookupPattern(ps.Name)
		if p.RacerOn(b.Name) == "" {
			continue
		}
		st.Patterns = append(st.Patterns, settingOf(p))
		if st.Rounds == 0 {
			continue
		}
		for _, level := range levels {
			for _, k := range st.Racers {
				st.Conditions = append(st.Conditions, Condition{
					Name: fmt.Sprintf("%s/%s/%s-%d", p.Name, level, KindRace, k), Pattern: p.Name,
					Kind: KindRace, Trials: slices.Clone(rounds), Racers: k, Isolation: level,
				})
			}
		}
	}
	return st
}

// PostgresMaxAttempts is how often a racer on PostgreSQL runs a delivery
// that met 40001 or 40P01: the server's word that the transaction must be
// run again, which a busy file on SQLite is not, so the input's
// max_attempts (SQLite's) does not bound it; the claim scenario's bound.
const PostgresMaxAttempts = 50

// planBroker records --broker and --broker-url, and what of the
// exploration they leave as it was.
func (st *Settings) planBroker(ov map[string]string) error {
	name, url := ov[pattern.FlagBroker], ov[pattern.FlagBrokerURL]
	if name == "" || name == broker.None {
		if url != "" {
			return fmt.Errorf("%w: --%s needs --%s %s", errclass.ErrUsage, pattern.FlagBrokerURL, pattern.FlagBroker, broker.NATS)
		}
		return nil
	}
	if _, err := broker.Lookup(name); err != nil {
		return fmt.Errorf("%w: --%s: %w", errclass.ErrUsage, pattern.FlagBroker, err)
	}
	// The races the input holds by default are left out, and the run says
	// so; races asked for by --rounds are refused: a run does not quietly
	// drop what it was asked for.
	if n, ok, err := scenario.IntFlag(ov, "rounds", 0, MaxRounds); err == nil && ok && n > 0 {
		return fmt.Errorf("%w: --rounds %d: not on --%s %s: %s (give --rounds 0)", errclass.ErrUsage, n, pattern.FlagBroker, name, racesNotOnBroker)
	}
	st.Broker, st.BrokerURL = name, url
	st.OnBroker = NotOnBroker
	return nil
}

// brokerOverrides are the settings' broker as the pattern scenario's
// flags.
func (st Settings) brokerOverrides() map[string]string {
	return map[string]string{pattern.FlagBroker: st.Broker, pattern.FlagBrokerURL: st.BrokerURL}
}

// NotOnBroker is what of explore a broker leaves as it was, and why.
var NotOnBroker = []NotRun{
	{"batch-journal, batch-rerun-all, the claim-ttl probe and lease-batch (the built-in subjects)", "they deliver no event from a queue (a batch of items, a lease, a probe inside the TTL): they run with the harness's processes, as without --broker"},
	{"the article files' races", racesNotOnBroker},
}

// racesNotOnBroker is why the article files' races do not run on a
// broker.
const racesNotOnBroker = "one durable pull consumer hands an event to one consumer at a time, so racers would not race: run them with --broker none"

// NotOnPostgres is what explore runs on SQLite alone, and why: one line
// each, recorded in the settings and printed by the report.
var NotOnPostgres = []NotRun{
	{"crash-point sweep, crash-after-hits and timed kills", "they crash the worker at each point, which redelivery --backend postgres already does for both redelivery patterns and the pattern scenario does for the article files; explore's are per SQLite file"},
	{"races with killed racers", "a killed racer's backend can hold its row lock after the client died (the lock that outlives its client), which is a measure of its own, not a race"},
	{"batch-rerun-all", "it keeps no table, so the backend changes nothing"},
	{"claim-ttl's probe inside the TTL", "the claim scenario runs the TTL claim on PostgreSQL, rounds 1-8 under each level; its pattern file races here"},
	{"lease-batch and its takeovers", "its workers read and write SQLite files only"},
}

// spec is the backend condition c runs on: SQLite, or the settings'
// PostgreSQL under c's isolation level.
func (st Settings) spec(c Condition) backend.Spec {
	if st.Backend == "" {
		return backend.SQLite
	}
	return backend.Spec{Name: st.Backend, Isolation: c.Isolation, SynchronousCommit: st.SynchronousCommit}
}

// checkOnlyTrial refuses an --only-trial index that is not a trial of the
// plan's random conditions, which would run nothing.
func checkOnlyTrial(in Input, only int) error {
	if only < 0 {
		return nil
	}
	most := 0
	for _, c := range NewSettings(in, -1).Conditions {
		most = max(most, len(c.Trials))
	}
	if most == 0 {
		return fmt.Errorf("--only-trial %d: --trials %d and --rounds %d give no random trial to run", only, in.Trials, in.Rounds)
	}
	if only >= most {
		return fmt.Errorf("--only-trial %d: --trials %d and --rounds %d give random trials 0 to %d", only, in.Trials, in.Rounds, most-1)
	}
	return nil
}

// Validate names the first bad field.
func (in Input) Validate() error {
	if err := protocol.CheckFields("explore", "event_id", in.EventID, "job_key", in.JobKey); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(in.EventID) == "":
		return errors.New("explore.event_id: must not be empty")
	case strings.TrimSpace(in.JobKey) == "":
		return errors.New("explore.job_key: must not be empty")
	case in.Trials < 0 || in.Trials > MaxTrials:
		return fmt.Errorf("explore.trials: %d, want 0 to %d", in.Trials, MaxTrials)
	case in.Rounds < 0 || in.Rounds > MaxRounds:
		return fmt.Errorf("explore.rounds: %d, want 0 to %d", in.Rounds, MaxRounds)
	case in.Parallel < 0 || in.Parallel > scenario.MaxParallel:
		return fmt.Errorf("explore.parallel: %d, want 1 to %d, or 0 for as many as the machine runs", in.Parallel, scenario.MaxParallel)
	case in.MaxAttempts < 1 || in.MaxAttempts > 100:
		return fmt.Errorf("explore.max_attempts: %d, want 1 to 100", in.MaxAttempts)
	case in.Items < 1 || in.Items > MaxItems:
		return fmt.Errorf("explore.items: %d, want 1 to %d", in.Items, MaxItems)
	}
	seen := map[int]bool{}
	for i, k := range in.Racers {
		if k < 2 || k > MaxRacers {
			return fmt.Errorf("explore.racers[%d]: %d, want 2 to %d", i, k, MaxRacers)
		}
		if seen[k] {
			return fmt.Errorf("explore.racers[%d]: %d is listed twice", i, k)
		}
		seen[k] = true
	}
	return nil
}

// PatternTrials is a pattern's random trials for trials per 100 at share
// per 100, rounded up so --trials 1 runs every pattern once.
func PatternTrials(trials, share int) int { return (trials*share + 99) / 100 }

// NewSettings derives the settings, the conditions included, from the
// input; only is the replayed trial index or -1.
func NewSettings(in Input, only int) Settings { return newSettings(in, only, BuiltIn()) }

// newSettings derives the settings over the patterns pats: BuiltIn for a
// run; Patterns, the hand-written article workers too, gives the settings
// a folder of format 6 or older recorded.
func newSettings(in Input, only int, pats []Pattern) Settings {
	st := Settings{
		EventID: in.EventID, JobKey: in.JobKey, Seed: in.Seed, Trials: in.Trials,
		HitTrials: (in.Trials + 1) / 2, KillTrials: in.Trials / 2,
		Racers: append([]int{}, in.Racers...), Rounds: in.Rounds,
		MaxAttempts: in.MaxAttempts, Items: in.Items, OnlyTrial: only, SQLite: wr.RequestedSQLite(),
	}
	if st.Racers == nil {
		st.Racers = []int{}
	}
	// With only set, a random condition runs that one trial if it has it,
	// and the sweep and the takeovers, which are not random trials, stay out.
	indices := func(n int) []int {
		if only >= 0 {
			if only < n {
				return []int{only}
			}
			return nil
		}
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	for _, p := range pats {
		st.Patterns = append(st.Patterns, settingOf(p))
		add := func(kind, suffix string, trials []int, racers int, kills bool) {
			if kind != KindDiscovery && kind != KindSweep && len(trials) == 0 {
				return
			}
			st.Conditions = append(st.Conditions, Condition{Name: p.Name + "/" + suffix, Pattern: p.Name, Kind: kind, Trials: trials, Racers: racers, Kills: kills})
		}
		add(KindDiscovery, KindDiscovery, nil, 0, false)
		if only < 0 {
			add(KindSweep, KindSweep, nil, 0, false)
		}
		if n := PatternTrials(st.Trials, p.TrialShare); n > 0 {
			if h := (n + 1) / 2; h > 0 {
				add(KindHits, KindHits, indices(h), 0, false)
			}
			if k := n / 2; k > 0 {
				add(KindKill, KindKill, indices(k), 0, false)
			}
		}
		if st.Rounds > 0 && p.Racer != "" {
			for _, k := range st.Racers {
				add(KindRace, fmt.Sprintf("%s-%d", KindRace, k), indices(st.Rounds), k, false)
				add(KindRace, fmt.Sprintf("%s-%d-kill", KindRace, k), indices(st.Rounds), k, true)
			}
		}
		if p.Takeover != nil && only < 0 {
			st.Conditions = append(st.Conditions,
				Condition{Name: p.Name + "/" + KindTakeover + "-fenced", Pattern: p.Name, Kind: KindTakeover},
				Condition{Name: p.Name + "/" + KindTakeover + "-unfenced", Pattern: p.Name, Kind: KindTakeover, Unfenced: true})
		}
	}
	return st
}

type plan struct {
	s Settings
	// parallel is the input section's parallel, 0 when it sets none.
	parallel int
	// sendLatency is how long each trial's receiver holds a send before
	// it logs it: none in a run; a test sets it to keep a killed
	// worker's last request in flight past its death.
	sendLatency time.Duration
}

func (p *plan) Settings() any { return p.s }

// preflight finds or builds the idemlab-nats the article files' trials
// start on --broker nats (broker.Preflight), before the output folder is
// made.
func (p *plan) preflight(ctx context.Context, env scenario.PreflightEnv) error {
	_, _, err := broker.Preflight(ctx, p.s.Broker, p.s.BrokerURL, env.Executable, env.Workdir, env.Notice)
	return err
}

// Caps: every trial and race side by side, as many as ParallelOf; a run
// with a broker needs its binary first.
func (p *plan) Caps() scenario.PlanCaps {
	c := scenario.PlanCaps{SideBySide: true, Parallel: p.parallel}
	if p.s.Broker != "" {
		c.Preflight = p.preflight
	}
	return c
}

// Processes counts, condition by condition, the processes the runner
// starts for each trial (deliver.Processes, from the subject's model):
// exact, but for a kill on the batch journal, which runs a resolve only
// if the kill left a send in flight, so it counts the most.
func (p *plan) Processes() int {
	n := 0
	for _, c := range p.s.Conditions {
		pat, _ := LookupPattern(c.Pattern)
		per := deliver.Processes(pat, p.s.params(), c.class(), c.Racers)
		if c.Kind == KindDiscovery {
			n += per
			continue
		}
		n += per * len(p.s.fold(c).Trials(p.s.Seed, p.s.Shard, pat.Points(p.s.params())))
	}
	for _, a := range p.s.Articles {
		n += a.Processes()
	}
	return n
}

// conditionsByName indexes the settings' conditions.
func (st Settings) conditionsByName() map[string]Condition {
	out := map[string]Condition{}
	for _, c := range st.Conditions {
		out[c.Name] = c
	}
	return out
}
