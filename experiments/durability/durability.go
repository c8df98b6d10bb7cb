// Package durability is the power-loss durability matrix: every pattern
// crashed at every point its workers report, by a process kill and by a
// power cut modelled by worker/faultvfs, under every journal_mode and
// synchronous setting. After each cut the parent checks the recovered file
// (integrity_check, rows), lets the pattern go on (redelivery, resume and
// resolve) and classifies what happened: rows rolled back, acknowledged
// work lost, duplicates, missing work. Beyond the workers' own points every
// condition cuts after an ACK with the worker's connection still open and
// after an ACK while the parent holds a read connection, and, with
// --sync-points, inside every sync the normal run made.
//
// The oracle (exact.go) comes from the settings alone, through an abstract
// model of SQLite's sync schedule (package experiments/syncmodel): under the drop fault
// mode it gives each trial's exact outcome, rows lost and the files a cut
// removes or brings back; under the seeded torn mode, the outcomes each
// combination of what the seed did to the unsynced files allows. Every
// trial keeps the VFS's op log, and the fold replays the cut from it
// (powerlayer.AuditCut), so verify re-derives the cut as well as its outcome.
//
// The scenario is opt-in: a full matrix is a few hundred processes, so it
// runs only with --scenario durability.
//
// The matrix is a definition over the trial engine (experiments/engine):
// its subjects are the patterns' built-in workers, its classes the crash
// kinds (a kill is the engine's Points, a power cut its Power, a server
// crash its ServerCrash), each planned as an engine.Sweep of point × seed
// (Settings.sweep), and its oracle the exact sync model.
//
// Reading order: settings.go (the input and the conditions), run.go (the
// engine's subject and one trial, process by process, on either backend)
// with records.go (what a trial records) and subjects.go (each pattern's
// built-in subject: its points, command lines and rows), model.go, exact.go and
// oracle.go (what the model says), fold.go with checks.go and
// classify.go (from the records to an outcome per trial), then matrix.go,
// findings.go and report.go (what a person reads).
//
// On --backend postgres the matrix is pattern × synchronous_commit × kind,
// where the kinds are a kill of the worker and a crash of the server
// itself; what differs from SQLite is the backend's (experiments/backend:
// the crash, its settings, amcheck) and the model's (exact.go's onServer).
// Its opt-in power kind cuts the power under a cluster of the trial's own
// on a power-loss filesystem, × fsync × full_page_writes × model
// (settings.go: the conditions; the cut, its guarantee, the fsync sweep
// and its record checks are experiments/backend's, the fs layer's cut and
// its record experiments/powerlayer's).
package durability

import (
	"context"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "durability"

// Patterns: the two redelivery patterns of article 000, the batch journal
// of article 002 and the TTL claim of article 003 (PatternClaim).
const (
	PatternSeparate = "redelivery-separate"
	PatternSingle   = "redelivery-single"
	PatternBatch    = "batch-journal"
)

// AllPatterns in run order.
var AllPatterns = []string{PatternSeparate, PatternSingle, PatternBatch, PatternClaim}

// Crash kinds. On SQLite a kill and a power cut; on PostgreSQL a kill
// of the worker, whose uncommitted work the server rolls back, and a crash
// of the server itself (exact.go's onServer, the engine's ServerCrash).
const (
	KindKill   = "kill"
	KindPower  = "power"
	KindServer = "server"
)

// AllKinds in run order, on SQLite.
var AllKinds = []string{KindKill, KindPower}

// everyKind is every crash kind of either backend, in the order tables
// and sentences list them.
var everyKind = []string{KindKill, KindPower, KindServer}

// Flag names.
const (
	FlagPattern     = "pattern"
	FlagJournalMode = "journal-mode"
	FlagSynchronous = "synchronous"
	FlagKind        = "kind"
	FlagItems       = "items"
	FlagFault       = "fault"
	FlagFaultSeeds  = "fault-seeds"
	FlagFaultUnit   = "fault-unit"
	FlagSeed        = "seed"
	FlagSyncPoints  = "sync-points"
	FlagSyncBound   = "sync-bound"
	FlagPowerLayer  = "power-layer"
	FlagDirModel    = "dir-model"
	// FlagSynchronousCommits narrows a run on PostgreSQL to some of
	// synchronous_commit's levels, as --synchronous does SQLite's.
	FlagSynchronousCommits = backend.FlagSynchronousCommits
	// The PostgreSQL power cut's flags (--kind power on --backend
	// postgres), spelled as pattern spells them.
	FlagFsync          = backend.FlagFsync
	FlagFullPageWrites = backend.FlagFullPageWrites
	FlagPowerModels    = "power-models"
	FlagWalSyncMethod  = "wal-sync-method"
)

// Scenario is the durability matrix, written against its own settings
// (scenario.Define adapts it). A test replaces the oracle by embedding it
// in a type with its own Expect.
type Scenario struct{}

// New is the scenario as the registry holds it.
func New() scenario.Scenario { return scenario.Define[Settings, Extra](Scenario{}) }

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "power loss: every pattern × crash point × journal_mode × synchronous, killed and power-cut (faultvfs); on --backend postgres × synchronous_commit, killed and server-crashed"
}

// Caps: opt-in, which keeps the matrix out of a run without --scenario;
// it runs on SQLite and on PostgreSQL.
func (Scenario) Caps() scenario.Caps {
	return scenario.Caps{OptIn: true, Backends: []string{store.BackendPostgres}, Cost: 45 * time.Millisecond}
}

// Validate: the settings have no limits beyond their JSON shape.
func (Scenario) Validate(Settings) error { return nil }

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: FlagPattern, Usage: "patterns, comma list: " + strings.Join(AllPatterns, ",")},
		{Name: FlagJournalMode, Usage: "journal modes, comma list, any case: DELETE,WAL"},
		{Name: FlagSynchronous, Usage: "synchronous levels, comma list, any case: OFF,NORMAL,FULL,EXTRA"},
		{Name: FlagKind, Usage: "crash kinds, comma list: kill,power on SQLite; kill,server on --backend postgres, and power there (opt-in: a power-loss filesystem under a cluster of its own per trial)"},
		{Name: FlagSynchronousCommits, Usage: "on --backend postgres: synchronous_commit levels, comma list: on,local,off"},
		{Name: FlagFsync, Usage: "on --backend postgres with --kind power: fsync values, comma list: on,off"},
		{Name: FlagFullPageWrites, Usage: "on --backend postgres with --kind power: full_page_writes values, comma list: on,off"},
		{Name: FlagPowerModels, Usage: "on --backend postgres with --kind power: what the cut leaves, comma list: drop,torn"},
		{Name: FlagWalSyncMethod, Usage: "on --backend postgres with --kind power: wal_sync_method (" + strings.Join(backend.WalSyncMethods, ", ") + "; the server's default, fdatasync, when not given)"},
		{Name: FlagItems, Usage: "batch items (durability.items), 1 to 5"},
		{Name: FlagFault, Usage: "what a power cut does to unsynced writes: drop (all lost, the default), keep (all kept, as after a process crash, whose outcome the model then predicts) or torn (seeded: each 512-byte unit, or 4 KiB with --fault-unit 4096, kept, dropped or garbled)"},
		{Name: FlagFaultSeeds, Usage: "with --fault torn: seeds per power trial, 1 to 64 (default 8)"},
		{Name: FlagFaultUnit, Usage: "the unit a torn power cut decides, 512 (a sector, the default) or 4096 (a page): durability with --fault torn, or on --backend postgres with --kind power and power model torn; pattern with --faults power (its torn rows)"},
		{Name: FlagSeed, Usage: "with --fault torn: the base seed; a trial's seeds follow it"},
		{Name: FlagPowerLayer, Usage: "where a power cut is made: vfs (idemlab's SQLite VFS, the default) or fs (a FUSE power-loss filesystem under the workers, one mount per trial, strict POSIX directories, under --fault drop or torn)"},
		{Name: FlagDirModel, Usage: "with --power-layer fs: when an entry change survives a cut, posix (only after an fsync of its directory, the default) or ext4-ordered (an fsync of a file also makes its names durable)"},
		{Name: FlagSyncPoints, Usage: "also cut inside every sync of the normal run, just before and just after the fsync; on --backend postgres with --kind power, at each fsync of the power-loss mount the normal run's delivery made (its window), under each power model", Bool: true},
		{Name: FlagSyncBound, Usage: "with --sync-points on --backend postgres: sweep at most this many fsyncs of each window, the first ones (1 to 1000; default all)"},
		scenario.ShardFlag,
	}
}

// Plan decodes the optional section, applies the flags and validates.
// An error names the flag when the value came from one, and the input
// file's field otherwise. On PostgreSQL the conditions are pattern ×
// synchronous_commit × kind (settingsOf).
func (Scenario) Plan(_ context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	b, section, overrides := req.Backend, req.Section, req.Overrides
	var in Input
	if len(section) > 0 && string(section) != "null" {
		if err := scenario.DecodeSection(Name, section, &in); err != nil {
			return nil, err
		}
	}
	from := map[string]string{}
	lists := []struct {
		flag, field string
		dst         *[]string
	}{
		{FlagPattern, "patterns", &in.Patterns}, {FlagJournalMode, "journal_modes", &in.JournalModes},
		{FlagSynchronous, "synchronous", &in.Synchronous}, {FlagKind, "kinds", &in.Kinds},
		{FlagSynchronousCommits, "synchronous_commits", &in.SynchronousCommits},
		{FlagFsync, "fsync", &in.Fsync}, {FlagFullPageWrites, "full_page_writes", &in.FullPageWrites},
		{FlagPowerModels, "power_models", &in.PowerModels},
	}
	for _, l := range lists {
		if v, ok := overrides[l.flag]; ok {
			*l.dst = splitList(v)
			from[l.field] = "--" + l.flag
		}
	}
	if v, ok := overrides[FlagWalSyncMethod]; ok {
		in.WalSyncMethod, from["wal_sync_method"] = strings.TrimSpace(v), "--"+FlagWalSyncMethod
	}
	if n, ok, err := scenario.IntFlag(overrides, FlagItems, 1, 5); err != nil {
		return nil, err
	} else if ok {
		in.Items = n
	}
	if err := faultFlags(&in, overrides, from); err != nil {
		return nil, err
	}
	in.machine = req.Machine
	st, err := settingsOf(b, in, from)
	if err != nil {
		return nil, err
	}
	if st.Shard, err = scenario.ShardOverride(overrides); err != nil {
		return nil, err
	}
	return &plan{s: st}, nil
}

// Expect, Fold, Check and Report are in oracle.go, fold.go and report.go.
var _ scenario.Typed[Settings, Extra] = Scenario{}
