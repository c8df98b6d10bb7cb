// Package pattern puts a user's own pattern file through every fault
// idemlab knows: a crash at every discovered point, seeded crashes and
// kills, concurrent deliveries behind a barrier, and power cuts. After each
// trial the parent reads the database and the receiver's log, and the
// pattern's own invariants judge what it read.
package pattern

import (
	"context"
	"fmt"
	"idemlab/worker/protocol"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	wp "idemlab/worker/pattern"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "pattern"

// Limits on the input, so a typo cannot start a week-long run.
const (
	MaxTrials   = 100_000
	MaxRounds   = 10_000
	MaxRacers   = 32
	MaxParallel = 16
)

// Input is the pattern section of input.json.
type Input struct {
	// Files are pattern files, read relative to the working folder and
	// carried into the results folder. --pattern-file names one; the
	// section may then be left out.
	Files []string `json:"files"`
	// EventID is the trials' event; default evt-1.
	EventID string `json:"event_id"`
	// Faults are the fault classes to run, each once: points, random,
	// concurrent, power; empty means all.
	Faults []string `json:"faults"`
	// Seed fixes every seeded crash, delay and torn write; default 1.
	Seed uint64 `json:"seed"`
	// Trials is the number of random trials per pattern: half crash at a
	// seeded k-th point, half are killed after a seeded delay; 0 to
	// [MaxTrials], default 20.
	Trials int `json:"trials"`
	// Racers lists the numbers of concurrent deliveries, each 2 to
	// [MaxRacers]; default 2, 4 and 8.
	Racers []int `json:"racers"`
	// Rounds is the number of races per racer count and kill mode, 0 to
	// [MaxRounds]; default 3.
	Rounds int `json:"rounds"`
	// Parallel is how many trials run at once, 1 to [MaxParallel]; 0 or
	// absent leaves it to --parallel and the machine, as many as it runs
	// (runtime.GOMAXPROCS).
	Parallel int `json:"parallel"`
	// SyncPoints (--sync-points) adds to a handler program's power class
	// a cut before and after each fsync its mount saw (syncpoints.go).
	SyncPoints bool `json:"sync_points"`
	// power, from --power, replaces every file's power settings: a
	// replay of one power condition cuts under its setting alone.
	power []string
	// pgPower, from --fsync, --synchronous-commits and --full-page-writes,
	// are the PostgreSQL power matrix's values (pgpower.go); empty ones
	// keep the run's one setting.
	pgPower pgMatrix
}

// Settings are recorded with the scenario; verify derives them again from
// the input section, the overrides and the folder's copies of the files.
type Settings struct {
	EventID    string   `json:"event_id"`
	Faults     []string `json:"faults"`
	Seed       uint64   `json:"seed"`
	HitTrials  int      `json:"crash_after_hits_trials"`
	KillTrials int      `json:"kill_trials"`
	Racers     []int    `json:"racers"`
	Rounds     int      `json:"rounds"`
	// Parallel is what folders made before it moved out of the settings
	// recorded (results.ScenarioResult.Parallel); a run leaves it 0.
	Parallel int `json:"parallel,omitempty"`
	// Shard is the part of the trials this run runs (--shard); nil runs
	// them all. The discovery runs run in every part.
	Shard      *shard.Part `json:"shard,omitempty"`
	Patterns   []Pattern   `json:"patterns"`
	Conditions []Condition `json:"conditions"`
	// Backend is empty for SQLite; on PostgreSQL it is postgres, and
	// Postgres is what every session must read back.
	Backend  string             `json:"backend,omitempty"`
	Postgres *store.PGRequested `json:"postgres,omitempty"`
	// NotRun are the fault classes asked for that the backend cannot
	// run, each with why; the report says so in one line each.
	NotRun []NotRun `json:"not_run,omitempty"`
	// Broker is the broker that redelivers (--broker nats), with every
	// setting; nil is the harness's own redelivery (--broker none).
	Broker *broker.Settings `json:"broker,omitempty"`
	// KnownUnsafeRule is how the oracle reads a bare "power" in a file's
	// known_unsafe: RuleSomeSetting (every run from format 5) expects some
	// power setting to break; empty, as an older folder recorded it,
	// expects every one to.
	KnownUnsafeRule string `json:"known_unsafe_rule,omitempty"`
	// SyncPoints: each power condition of a handler program also cuts
	// just before and just after every fsync on its mount, over the
	// fsyncs its sync discovery counted (syncpoints.go).
	SyncPoints bool `json:"sync_points,omitempty"`
}

// RuleSomeSetting is the KnownUnsafeRule of a run from format 5 on.
const RuleSomeSetting = "some-setting"

// NotRun is a fault class left out on the run's backend.
type NotRun struct {
	Fault  string `json:"fault"`
	Reason string `json:"reason"`
	// Where is what leaves it out when it is not the backend, as
	// "--broker nats".
	Where string `json:"where,omitempty"`
}

// powerNotOnPostgres is why the power class does not run on PostgreSQL
// unless asked for: each of its trials starts a cluster of its own.
const powerNotOnPostgres = "opt-in on PostgreSQL (--faults power): each power trial runs on a cluster of its own on a power-loss filesystem"

// Target is where the settings' conditions run, as known_unsafe
// qualifies an entry.
func (s Settings) Target() wp.Target {
	t := wp.Target{Backend: store.BackendSQLite}
	if s.Backend == store.BackendPostgres {
		t.Backend = s.Backend
		if s.Postgres != nil {
			t.Isolation, _ = s.Postgres.Level()
		}
	}
	return t
}

// Pattern is one pattern file as the run used it.
type Pattern struct {
	// Source is the file's name as given.
	Source string  `json:"source"`
	SHA256 string  `json:"sha256"`
	File   wp.File `json:"file"`
	// MaxDeliveries and Power are the file's, with defaults applied.
	MaxDeliveries int      `json:"max_deliveries"`
	Power         []string `json:"power"`
	// Dir is the pattern file's folder, where a program runs; TimeoutMS
	// its timeout; Files the SHA-256 of every argument of its command that
	// names a file there.
	Dir       string            `json:"dir,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	Files     map[string]string `json:"files,omitempty"`
	// PowerNotApplicable says, for a program on SQLite, what the machine
	// lacks for its power class (a power-loss filesystem mount); empty
	// where the program's power trials run on one.
	PowerNotApplicable string `json:"power_not_applicable,omitempty"`
}

// Condition is one fault class on one pattern.
type Condition struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	// Fault is a fault class, or FaultNone for the run without faults.
	Fault string `json:"fault"`
	// Power is the journal_mode/synchronous setting of a power condition.
	Power string `json:"power,omitempty"`
}

// Scheduled says whether the OS schedules the condition rather than the
// seed: one of its fault's engine classes is scheduled (random's kills
// after a delay, the concurrent deliveries).
func (c Condition) Scheduled() bool {
	return slices.ContainsFunc(engine.ClassesOf(c.Fault), engine.Scheduled)
}

// FaultNone is the condition of a delivery without any fault: a pattern
// that breaks its invariants here is wrong before any fault.
const FaultNone = "none"

// Scenario is the pattern scenario.
type Scenario struct{}

// New is the scenario as the registry lists it.
func New() scenario.Scenario { return scenario.Define[Settings, Extra](Scenario{}) }

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "your own pattern file: crash points, seeded crashes and kills, concurrent deliveries, power cuts, judged by its invariants"
}

// Caps: opt-in, since a pattern is the user's, so it runs only when
// asked for; on SQLite and on PostgreSQL. A process costs about 20 ms: a
// shipped file's default run, 374 to 529 processes in 8 to 9.4 s.
func (Scenario) Caps() scenario.Caps {
	return scenario.Caps{OptIn: true, Backends: []string{store.BackendPostgres}, Cost: 20 * time.Millisecond}
}

// Validate: the settings have no limits beyond their JSON shape.
func (Scenario) Validate(Settings) error { return nil }

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: "pattern-file", Usage: "a pattern file to test (replaces pattern.files)"},
		{Name: "faults", Usage: "fault classes, comma-separated: points,random,concurrent,power (default all; power opt-in on PostgreSQL)"},
		{Name: "seed", Usage: "the seed of the random trials"},
		{Name: "trials", Usage: "random trials per pattern"},
		{Name: "rounds", Usage: "races per racer count and kill mode"},
		{Name: "power", Usage: "power settings, comma-separated JOURNAL_MODE/SYNCHRONOUS (replaces each pattern file's power list)"},
		{Name: FlagBroker, Usage: "pattern: who redelivers, none (the harness, default) or nats (a JetStream server per trial: each delivery a consumer process that fetches from a durable pull consumer and acks at the ack step or after the last step; points and random only; needs the idemlab-nats binary)"},
		{Name: FlagBrokerURL, Usage: "pattern, with --broker nats: a NATS server of your own (nats://host:port) instead of one per trial; each trial makes a stream IDEMLAB_PATTERN_<condition>_<trial> there and deletes it"},
		{Name: flagFsync, Usage: "on --backend postgres with --faults power: fsync values, comma list: on,off (default on)"},
		{Name: flagSynchronousCommits, Usage: "on --backend postgres with --faults power: synchronous_commit values, comma list: on,local,off (default the run's --synchronous-commit)"},
		{Name: flagFullPageWrites, Usage: "on --backend postgres with --faults power: full_page_writes values, comma list: on,off (default on)"},
		{Name: FlagSyncPoints, Usage: "with --faults power on a handler program: also cut just before and just after every fsync on the trial's mount, over the fsyncs a discovery delivery on the mount counted", Bool: true},
		scenario.ShardFlag,
	}
}

// Plan decodes the section, applies the overrides, and reads and checks
// every pattern file through the request's files: a bad file is refused
// here, before anything runs, naming the file and the field. On SQLite a
// file's statements run on a scratch database here, under ctx. On
// PostgreSQL they are checked for shape here and prepared on the server
// when the run starts, so verify, which has no server, derives the same
// settings; the power class is left out and recorded as not run.
func (Scenario) Plan(ctx context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	b, section, ov, files := req.Backend, req.Section, req.Overrides, req.Files
	in := DefaultInput()
	if len(section) > 0 && string(section) != "null" {
		if err := scenario.DecodeSection(Name, section, &in); err != nil {
			return nil, err
		}
	}
	if err := in.override(ov); err != nil {
		return nil, err
	}
	asked := slices.Clone(in.Faults)
	askedPower := slices.Contains(asked, wp.FaultPower)
	if err := in.validate(); err != nil {
		return nil, err
	}
	part, err := scenario.ShardOverride(ov)
	if err != nil {
		return nil, err
	}
	st := Settings{
		Shard:   part,
		EventID: in.EventID, Faults: in.Faults, Seed: in.Seed,
		HitTrials: (in.Trials + 1) / 2, KillTrials: in.Trials / 2,
		Racers: in.Racers, Rounds: in.Rounds,
		KnownUnsafeRule: RuleSomeSetting,
		SyncPoints:      in.SyncPoints,
	}
	if !b.IsSQLite() {
		st.Backend, st.Postgres = b.Name, b.Requested()
		if askedPower && req.Machine.FUSE != "" {
			return nil, fmt.Errorf("%w: %s.faults: power: not applicable on PostgreSQL: %s", errclass.ErrUsage, Name, req.Machine.FUSE)
		}
		if i := slices.Index(st.Faults, wp.FaultPower); i >= 0 && !askedPower {
			st.Faults = slices.Delete(slices.Clone(st.Faults), i, i+1)
			st.NotRun = append(st.NotRun, NotRun{Fault: wp.FaultPower, Reason: powerNotOnPostgres})
		}
		if len(st.Faults) == 0 {
			return nil, fmt.Errorf("%s.faults: only power was asked for, and %s", Name, powerNotOnPostgres)
		}
	}
	if err := st.PlanBroker(ov, asked); err != nil {
		return nil, err
	}
	if err := in.pgPower.check(b, askedPower); err != nil {
		return nil, err
	}
	if err := st.addFiles(ctx, files, in.Files, b, in.power, in.pgPower, req.Machine); err != nil {
		return nil, err
	}
	for _, p := range st.Patterns {
		if askedPower && p.PowerNotApplicable != "" {
			return nil, progPowerNotApplicable(p.PowerNotApplicable)
		}
	}
	return &plan{s: st, parallel: in.Parallel}, nil
}

// AddFiles reads and checks the named pattern files on backend on, as
// Plan does, and adds each with its conditions under s.Faults; power, when
// set, replaces every file's power settings. Explore plans its article
// patterns with it: its files are not programs, so no machine fact is
// asked for.
func (s *Settings) AddFiles(ctx context.Context, files scenario.Files, names []string, on backend.Spec, power []string) error {
	return s.addFiles(ctx, files, names, on, power, pgMatrix{}, scenario.Machine{})
}

// addFiles is AddFiles on the machine m the run's plan request records: a
// program's power class needs its FUSE.
func (s *Settings) addFiles(ctx context.Context, files scenario.Files, names []string, on backend.Spec, power []string, matrix pgMatrix, m scenario.Machine) error {
	for _, name := range names {
		p, err := readPattern(ctx, files, name, on, power, m)
		if err != nil {
			return err
		}
		for _, other := range s.Patterns {
			if other.File.Name == p.File.Name {
				return fmt.Errorf("%s: name %q is also %s's; every pattern needs its own name", name, p.File.Name, other.Source)
			}
		}
		if !on.IsSQLite() && slices.Contains(s.Faults, wp.FaultPower) {
			// Asked for on PostgreSQL: the matrix's settings, by default
			// the run's one, for a program as for the built-in worker.
			p.Power = pgPowerSettings(on.Requested(), matrix)
		}
		s.Patterns = append(s.Patterns, p)
		s.Conditions = append(s.Conditions, conditionsOf(p, s.Faults)...)
	}
	return nil
}

func readPattern(ctx context.Context, files scenario.Files, name string, on backend.Spec, power []string, m scenario.Machine) (Pattern, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return Pattern{}, fmt.Errorf("pattern file %s: %w", name, err)
	}
	check := wp.Check
	if !on.IsSQLite() {
		check = func(_ context.Context, b []byte) (wp.File, error) { return wp.Decode(b) }
	}
	if f, err := wp.Decode(b); err == nil && !f.RunsOn(on.Name) {
		return Pattern{}, fmt.Errorf("pattern file %s: backends: %q, and the run is on %s; run it with --backend %s", name, f.Backends, on.Name, f.Backends[0])
	}
	f, err := check(ctx, b)
	if err != nil {
		return Pattern{}, fmt.Errorf("pattern file %s: %w", name, err)
	}
	p := Pattern{Source: name, SHA256: results.SHA256Hex(b), File: f, MaxDeliveries: f.MaxDeliveries, Power: f.Power}
	if p.MaxDeliveries == 0 {
		p.MaxDeliveries = wp.DefaultMaxDeliveries
	}
	if f.IsProgram() {
		// A program does not open its files through idemlab's VFS: its
		// power cuts are taken on a power-loss filesystem (powerfs.go),
		// where the machine has FUSE.
		p.Power = nil
		p.Dir = filepath.ToSlash(filepath.Dir(name))
		p.TimeoutMS = f.HandlerTimeoutMS
		if p.TimeoutMS == 0 {
			p.TimeoutMS = wp.DefaultHandlerTimeoutMS
		}
		p.Files = programFiles(files, p.Dir, f.Command)
		if !on.IsSQLite() {
			return p, nil
		}
		if p.PowerNotApplicable = m.FUSE; p.PowerNotApplicable != "" {
			return p, nil
		}
		p.Power = f.Power
	}
	if !on.IsSQLite() {
		p.Power = nil
		return p, nil
	}
	if len(power) > 0 {
		p.Power = append([]string{}, power...)
	}
	if len(p.Power) == 0 {
		p.Power = append([]string{}, wp.DefaultPower...)
	}
	for i, s := range p.Power {
		j, sy, _ := wp.ParsePower(s)
		p.Power[i] = j + "/" + sy
	}
	return p, nil
}

// conditionsOf lists a pattern's conditions: the run without faults, then
// one per fault class, power once per setting.
func conditionsOf(p Pattern, faults []string) []Condition {
	name := p.File.Name
	out := []Condition{{Name: name + "/" + FaultNone, Pattern: name, Fault: FaultNone}}
	for _, f := range faults {
		if f != wp.FaultPower {
			out = append(out, Condition{Name: name + "/" + f, Pattern: name, Fault: f})
			continue
		}
		for _, s := range p.Power {
			out = append(out, Condition{Name: name + "/power:" + s, Pattern: name, Fault: f, Power: s})
		}
		// A program without a mount gets no power condition; the report
		// says why.
	}
	return out
}

// DefaultInput is the section an input file without one gets: a pattern
// is named with --pattern-file, so the file need not mention it.
func DefaultInput() Input {
	return Input{EventID: "evt-1", Seed: 1, Trials: 20, Racers: []int{2, 4, 8}, Rounds: 3}
}

func (in *Input) override(ov map[string]string) error {
	if v, ok := ov["pattern-file"]; ok {
		in.Files = []string{v}
	}
	if v, ok := ov["faults"]; ok {
		in.Faults = nil
		for _, f := range strings.Split(v, ",") {
			in.Faults = append(in.Faults, strings.TrimSpace(f))
		}
	}
	if v, ok := ov["power"]; ok {
		for _, ps := range strings.Split(v, ",") {
			j, sy, err := wp.ParsePower(ps)
			if err != nil {
				return fmt.Errorf("--power %w", err)
			}
			if k := j + "/" + sy; !slices.Contains(in.power, k) {
				in.power = append(in.power, k)
			}
		}
	}
	in.pgPower.override(ov)
	if b, ok, err := scenario.BoolFlag(ov, FlagSyncPoints); err != nil {
		return err
	} else if ok {
		in.SyncPoints = b
	}
	if v, ok := ov["seed"]; ok {
		var s uint64
		if _, err := fmt.Sscan(v, &s); err != nil {
			return fmt.Errorf("--seed %q: want a whole number from 0", v)
		}
		in.Seed = s
	}
	for name, dst := range map[string]*int{"trials": &in.Trials, "rounds": &in.Rounds} {
		hi := map[string]int{"trials": MaxTrials, "rounds": MaxRounds}[name]
		v, ok, err := scenario.IntFlag(ov, name, 0, hi)
		if err != nil {
			return err
		}
		if ok {
			*dst = v
		}
	}
	return nil
}

func (in *Input) validate() error {
	if len(in.Files) == 0 {
		return fmt.Errorf("%s.files: empty; name a pattern file with --pattern-file FILE", Name)
	}
	if strings.TrimSpace(in.EventID) == "" {
		return fmt.Errorf("%s.event_id: must not be empty", Name)
	}
	if err := protocol.CheckFields(Name, "event_id", in.EventID); err != nil {
		return err
	}
	if len(in.Faults) == 0 {
		in.Faults = append([]string{}, wp.Faults...)
	}
	for i, f := range in.Faults {
		if !slices.Contains(wp.Faults, f) || slices.Index(in.Faults, f) != i {
			return fmt.Errorf("%s.faults[%d]: %q: want each of %s at most once", Name, i, f, strings.Join(wp.Faults, ", "))
		}
	}
	// Fault classes run in one order, whatever order they were named in.
	slices.SortFunc(in.Faults, func(a, b string) int { return slices.Index(wp.Faults, a) - slices.Index(wp.Faults, b) })
	switch {
	case in.Trials < 0 || in.Trials > MaxTrials:
		return fmt.Errorf("%s.trials: %d, want 0 to %d", Name, in.Trials, MaxTrials)
	case in.Rounds < 0 || in.Rounds > MaxRounds:
		return fmt.Errorf("%s.rounds: %d, want 0 to %d", Name, in.Rounds, MaxRounds)
	case in.Parallel < 0 || in.Parallel > MaxParallel:
		return fmt.Errorf("%s.parallel: %d, want 1 to %d, or 0 for as many as the machine runs", Name, in.Parallel, MaxParallel)
	}
	for i, k := range in.Racers {
		if k < 2 || k > MaxRacers {
			return fmt.Errorf("%s.racers[%d]: %d, want 2 to %d", Name, i, k, MaxRacers)
		}
	}
	return nil
}

type plan struct {
	s Settings
	// parallel is the input section's parallel, 0 when it sets none.
	parallel int
}

func (p *plan) Settings() any { return p.s }

// preflight finds or builds the idemlab-nats a run on its own brokers
// starts (broker.Preflight), before the output folder is made.
func (p *plan) preflight(ctx context.Context, env scenario.PreflightEnv) error {
	b := p.s.Broker
	var err error
	b.Binary, b.BinarySHA256, err = broker.Preflight(ctx, b.Name, b.URL, env.Executable, env.Workdir, env.Notice)
	return err
}

// Processes counts the run's processes for progress (Settings.Processes).
func (p *plan) Processes() int { return p.s.Processes() }

// Processes counts the settings' processes from the plan the engine runs:
// each pattern's discovery, then every trial of the run's part, planned
// from the points the file's steps give (two a step; a program's are
// known only once its discovery ran, so none). A race runs its racers and
// a recovery, any other trial a first delivery and one redelivery; a
// handler that stops early passes fewer points, and a trial that
// redelivers more than once runs more.
func (s Settings) Processes() int {
	n := 0
	for _, pt := range s.Patterns {
		n++ // discovery
		found := engine.Found{Points: make([]string, 2*len(pt.File.Handler))}
		for _, c := range s.Conditions {
			if c.Pattern != pt.File.Name {
				continue
			}
			ts, _ := engine.Plan(context.Background(), s.Seed, s.Shard, s.sets(c, false), found)
			for _, t := range ts {
				n += 2 + max(0, t.Racers-1)
			}
		}
	}
	return n
}

// SQLite is the pattern worker's database settings outside power trials.
func SQLite() sqlitedb.Settings {
	o := wp.Options("")
	return sqlitedb.Settings{JournalMode: o.JournalMode, Synchronous: o.Synchronous, BusyTimeoutMS: int(o.BusyTimeout.Milliseconds())}
}
