// Package patternfile is the pattern-file subject: a pattern file's steps,
// run by the pattern worker, or a user's handler program, put through the
// engine's fault classes (a crash at every discovered point, seeded
// crashes and kills, concurrent deliveries behind a barrier, power cuts)
// on SQLite, PostgreSQL, a power-loss mount or a broker. After each trial
// the parent reads the database and the receiver's log; Fold checks every
// process against the trial's plan and judges it by the file's own
// invariants. The pattern scenario and explore's article files run it.
package patternfile

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Name is the pattern scenario's name, its input section's and its
// records'.
const Name = "pattern"

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
	// FaultUnit is the unit each torn power cut decides, in bytes:
	// faultvfs.UnitSector or UnitPage, on every layer (the VFS, a
	// program's mount, a PostgreSQL cluster's mount); 0, as every folder
	// made before the setting and every run that does not set it records
	// it, is the sector (Unit).
	FaultUnit int `json:"fault_unit,omitempty"`
}

// Unit is the unit every torn cut of the run decides: FaultUnit, or the
// 512-byte sector where it is 0.
func (s Settings) Unit() int {
	if s.FaultUnit == 0 {
		return faultvfs.UnitSector
	}
	return s.FaultUnit
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

// AddFiles reads and checks the named pattern files on backend on, as
// Plan does, and adds each with its conditions under s.Faults; power, when
// set, replaces every file's power settings. Explore plans its article
// patterns with it: its files are not programs, so no machine fact is
// asked for.
func (s *Settings) AddFiles(ctx context.Context, files scenario.Files, names []string, on backend.Spec, power []string) error {
	return s.AddFilesOn(ctx, files, names, on, power, backend.PowerMatrix{}, scenario.Machine{})
}

// addFiles is AddFiles on the machine m the run's plan request records: a
// program's power class needs its FUSE.
func (s *Settings) AddFilesOn(ctx context.Context, files scenario.Files, names []string, on backend.Spec, power []string, matrix backend.PowerMatrix, m scenario.Machine) error {
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
			p.Power = matrix.Settings(on.Requested())
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
	if err == nil {
		err = f.CheckFaults(engine.FaultWords())
	}
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

// Processes counts the settings' processes from the plan the engine runs:
// each pattern's discovery, then every trial of the run's part, planned
// from the points the file's steps give (its model, wp.File.Points; a
// program's are known only once its discovery ran, so none). A race runs its racers and
// a recovery, any other trial a first delivery and one redelivery; a
// handler that stops early passes fewer points, and a trial that
// redelivers more than once runs more.
func (s Settings) Processes() int {
	n := 0
	for _, pt := range s.Patterns {
		n++ // discovery
		found := engine.Found{Points: pt.File.Points()}
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
