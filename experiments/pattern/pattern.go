// Package pattern puts a user's own pattern file through every fault
// idemlab knows: a crash at every discovered point, seeded crashes and
// kills, concurrent deliveries behind a barrier, and power cuts. After each
// trial the parent reads the database and the receiver's log, and the
// pattern's own invariants judge what it read.
package pattern

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
	pf "idemlab/experiments/subject/patternfile"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = pf.Name

// Limits on the input, so a typo cannot start a week-long run.
const (
	MaxTrials = 100_000
	MaxRounds = 10_000
	MaxRacers = 32
)

// Input is the pattern section of input.json.
type Input struct {
	// Files are pattern files, read relative to the working folder and
	// carried into the results folder; required, unless --pattern-file
	// names one (the section may then be left out).
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
	// Parallel is how many trials run at once, 1 to [scenario.MaxParallel]; 0 or
	// absent leaves it to --parallel and the machine, as many as it runs
	// (runtime.GOMAXPROCS).
	Parallel int `json:"parallel"`
	// SyncPoints (--sync-points) adds to a handler program's power class
	// a cut before and after each fsync its mount saw (syncpoints.go);
	// default false. Refused without the power class and on a file the
	// built-in worker runs, where it would sweep nothing.
	SyncPoints bool `json:"sync_points"`
	// FaultUnit (--fault-unit) is, with the power class only, the unit
	// each torn cut decides, on every layer (idemlab's VFS, a program's
	// mount, a PostgreSQL cluster's mount): 512 (a sector, the default)
	// or 4096 (a page).
	FaultUnit int `json:"fault_unit"`
	// power, from --power, replaces every file's power settings: a
	// replay of one power condition cuts under its setting alone.
	power []string
	// pgPower, from --fsync, --synchronous-commits and --full-page-writes,
	// are the PostgreSQL power matrix's values (pgpower.go); empty ones
	// keep the run's one setting.
	pgPower backend.PowerMatrix
	// from names the flag that set a field, or its place in the input.
	from map[string]string
}

// powerNotOnPostgres is why the power class does not run on PostgreSQL
// unless asked for: each of its trials starts a cluster of its own.
const powerNotOnPostgres = "opt-in on PostgreSQL (--faults power): each power trial runs on a cluster of its own on a power-loss filesystem"

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
		{Name: "faults", Usage: "fault classes, comma-separated: " + strings.Join(engine.FaultWords(), ",") + " (default all; power opt-in on PostgreSQL)"},
		{Name: "seed", Usage: "the seed of the random trials"},
		{Name: "trials", Usage: "random trials per pattern"},
		{Name: "rounds", Usage: "races per racer count and kill mode"},
		{Name: "power", Usage: "power settings, comma-separated JOURNAL_MODE/SYNCHRONOUS (replaces each pattern file's power list)"},
		{Name: FlagBroker, Usage: "pattern: who redelivers, none (the harness, default) or nats (a JetStream server per trial: each delivery a consumer process that fetches from a durable pull consumer and acks at the ack step or after the last step; points and random only; needs the idemlab-nats binary)"},
		{Name: FlagBrokerURL, Usage: "pattern, with --broker nats: a NATS server of your own (nats://host:port) instead of one per trial; each trial makes a stream IDEMLAB_PATTERN_<condition>_<trial> there and deletes it"},
		{Name: backend.FlagFsync, Usage: "on --backend postgres with --faults power: fsync values, comma list: on,off (default on)"},
		{Name: backend.FlagSynchronousCommits, Usage: "on --backend postgres with --faults power: synchronous_commit values, comma list: on,local,off (default the run's --synchronous-commit)"},
		{Name: backend.FlagFullPageWrites, Usage: "on --backend postgres with --faults power: full_page_writes values, comma list: on,off (default on)"},
		{Name: FlagSyncPoints, Usage: "with --faults power on a handler program (refused, exit 2, on a file the built-in worker runs): also cut just before and just after every fsync on the trial's mount, over the fsyncs a discovery delivery on the mount counted", Bool: true},
		{Name: FlagFaultUnit, Usage: "with --faults power: the unit each torn cut decides, 512 (a sector, the default) or 4096 (a page)"},
		scenario.ShardFlag,
	}
}

// FlagFaultUnit sets the torn cuts' unit, under durability's name.
const FlagFaultUnit = "fault-unit"

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
		FaultUnit:       in.FaultUnit,
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
	if in.FaultUnit != 0 && !slices.Contains(st.Faults, wp.FaultPower) {
		return nil, fmt.Errorf("%w: %s: only with the power class (--faults power), whose torn cuts it sizes", errclass.ErrUsage, in.field("fault_unit"))
	}
	if err := st.PlanBroker(ov, asked); err != nil {
		return nil, err
	}
	if err := in.pgPower.Check(b, askedPower, "--faults power"); err != nil {
		return nil, err
	}
	if err := st.AddFilesOn(ctx, files, in.Files, b, in.power, in.pgPower, req.Machine); err != nil {
		return nil, err
	}
	for _, p := range st.Patterns {
		if askedPower && p.PowerNotApplicable != "" {
			return nil, pf.ProgPowerNotApplicable(p.PowerNotApplicable)
		}
	}
	if err := in.checkSyncPoints(st); err != nil {
		return nil, err
	}
	return &plan{s: st, parallel: in.Parallel}, nil
}

// checkSyncPoints refuses sync_points where it would sweep nothing: the
// sweep cuts a handler program's power class at its mount's fsyncs, so
// without the power class, or for a pattern file the built-in worker runs
// (whose power cuts are its named points and the ACK), it is a usage
// error rather than a silent no-op.
func (in *Input) checkSyncPoints(st Settings) error {
	if !in.SyncPoints {
		return nil
	}
	if !slices.Contains(st.Faults, wp.FaultPower) {
		return fmt.Errorf("%w: %s: only with the power class (--faults power), whose cuts it sweeps", errclass.ErrUsage, in.field("sync_points"))
	}
	for _, p := range st.Patterns {
		if !p.File.IsProgram() {
			return fmt.Errorf("%w: %s: sweeps a handler program's power cuts only (the fsyncs on its mount), and %s is run by the built-in worker, whose power cuts are at its named points and the ACK", errclass.ErrUsage, in.field("sync_points"), p.Source)
		}
	}
	return nil
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
	in.pgPower.Override(ov)
	in.from = map[string]string{}
	if b, ok, err := scenario.BoolFlag(ov, FlagSyncPoints); err != nil {
		return err
	} else if ok {
		in.SyncPoints, in.from["sync_points"] = b, "--"+FlagSyncPoints
	}
	if n, ok, err := scenario.IntFlag(ov, FlagFaultUnit, faultvfs.UnitSector, faultvfs.UnitPage); err != nil {
		return err
	} else if ok {
		in.FaultUnit, in.from["fault_unit"] = n, "--"+FlagFaultUnit
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

// field is how an error names an input field: the flag that set it, or
// its place in input.json.
func (in *Input) field(name string) string {
	if f, ok := in.from[name]; ok {
		return f
	}
	return Name + "." + name
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
	words := engine.FaultWords()
	if len(in.Faults) == 0 {
		in.Faults = words
	}
	for i, f := range in.Faults {
		if !slices.Contains(words, f) || slices.Index(in.Faults, f) != i {
			return fmt.Errorf("%s.faults[%d]: %q: want each of %s at most once", Name, i, f, strings.Join(words, ", "))
		}
	}
	// Fault classes run in one order, the registry's, whatever order they
	// were named in.
	slices.SortFunc(in.Faults, func(a, b string) int { return slices.Index(words, a) - slices.Index(words, b) })
	switch {
	case in.Trials < 0 || in.Trials > MaxTrials:
		return fmt.Errorf("%s.trials: %d, want 0 to %d", Name, in.Trials, MaxTrials)
	case in.Rounds < 0 || in.Rounds > MaxRounds:
		return fmt.Errorf("%s.rounds: %d, want 0 to %d", Name, in.Rounds, MaxRounds)
	case in.Parallel < 0 || in.Parallel > scenario.MaxParallel:
		return fmt.Errorf("%s.parallel: %d, want 1 to %d, or 0 for as many as the machine runs", Name, in.Parallel, scenario.MaxParallel)
	}
	if in.FaultUnit != 0 && in.FaultUnit != faultvfs.UnitSector && in.FaultUnit != faultvfs.UnitPage {
		return fmt.Errorf("%s %d: want %d or %d", in.field("fault_unit"), in.FaultUnit, faultvfs.UnitSector, faultvfs.UnitPage)
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

// Run discovers each pattern's points, then runs its fault classes.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	env.Slots = env.SlotsOf(p.Caps().Slots(0))
	return pf.Run(ctx, env, p.s, Name)
}

// Caps: every trial and race side by side, as many as ParallelOf; a run
// on brokers of its own needs their binary first.
func (p *plan) Caps() scenario.PlanCaps {
	c := scenario.PlanCaps{SideBySide: true, Parallel: p.parallel}
	if p.s.Broker != nil {
		c.Preflight = p.preflight
	}
	return c
}
