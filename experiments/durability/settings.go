package durability

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// busyTimeoutMS is every worker's default busy timeout; the matrix does not
// vary it.
const busyTimeoutMS = 5000

// Input is the durability section of input.json. Every field may be left
// out; the defaults are the full matrix.
type Input struct {
	// EventID is the redelivery patterns' event; default
	// agent-run-042:completed.
	EventID string `json:"event_id,omitempty"`
	// JobKey is the redelivery patterns' follow-up job key; default
	// review-agent-run-042.
	JobKey string `json:"job_key,omitempty"`
	// JobID is the batch journal's job id; default job-d.
	JobID string `json:"job_id,omitempty"`
	// Items is the batch journal's item count, 1 to 5; default 2.
	Items int `json:"items,omitempty"`
	// Patterns narrow the matrix to these patterns; default all.
	Patterns []string `json:"patterns,omitempty"`
	// JournalModes narrow it to these journal modes (DELETE, WAL; any
	// case, recorded as SQLite spells them); default both.
	JournalModes []string `json:"journal_modes,omitempty"`
	// Synchronous narrows it to these synchronous levels (OFF, NORMAL,
	// FULL, EXTRA; any case); default all four.
	Synchronous []string `json:"synchronous,omitempty"`
	// Kinds narrow it to these crash kinds: kill and power on SQLite;
	// kill, server and (opt-in) power on PostgreSQL. Default: kill and
	// power on SQLite, kill and server on PostgreSQL.
	Kinds []string `json:"kinds,omitempty"`
	// Fault is what a power cut does to unsynced writes: "drop" (the
	// default) or "torn".
	Fault string `json:"fault,omitempty"`
	// FaultSeeds is, with fault torn only, the seeds per power trial, 1
	// to 64; default 8.
	FaultSeeds int `json:"fault_seeds,omitempty"`
	// FaultUnit is, with fault torn (on PostgreSQL: kind power with power
	// model torn) only, the unit a torn write decides: 512 (a sector, the
	// default) or 4096 (a page).
	FaultUnit int `json:"fault_unit,omitempty"`
	// Seed is, with fault torn only, the base seed, which a trial's
	// seeds follow; default 1.
	Seed *int64 `json:"seed,omitempty"`
	// SyncPoints, when true, adds a cut inside every sync of the normal
	// run, just before and just after the fsync; default false.
	SyncPoints bool `json:"sync_points,omitempty"`
	// SyncBound, with SyncPoints on PostgreSQL, sweeps at most this many
	// fsyncs of each window, the first ones, 1 to 1000; default 0,
	// which sweeps them all.
	SyncBound int `json:"sync_bound,omitempty"`
	// PowerLayer is where a power cut is made: "vfs" (the default) or
	// "fs" (engine.PowerLayers).
	PowerLayer string `json:"power_layer,omitempty"`
	// DirModel is the fs layer's directory model: "posix" (the default)
	// or "ext4-ordered" (powerfs.DirExt4).
	DirModel string `json:"dir_model,omitempty"`
	// SynchronousCommits are PostgreSQL's synchronous_commit levels (on,
	// local, off), on --backend postgres only; the default is all three.
	SynchronousCommits []string `json:"synchronous_commits,omitempty"`
	// Fsync is the PostgreSQL power cut's list of fsync values (on, off;
	// kind power on --backend postgres); default both.
	Fsync []string `json:"fsync,omitempty"`
	// FullPageWrites is the PostgreSQL power cut's list of
	// full_page_writes values (on, off); default both.
	FullPageWrites []string `json:"full_page_writes,omitempty"`
	// PowerModels is the PostgreSQL power cut's list of what a cut
	// leaves (drop, torn); default both.
	PowerModels []string `json:"power_models,omitempty"`
	// WalSyncMethod is the PostgreSQL power cut's wal_sync_method, one
	// value; the server's default (fdatasync) when empty.
	WalSyncMethod string `json:"wal_sync_method,omitempty"`
	// machine is the run's machine as the plan request gives it, not a
	// field of the input file.
	machine scenario.Machine
}

// Condition is one pattern under one setting; its trials are a normal run
// and one crash at each point that run reported.
type Condition struct {
	Name        string `json:"name"`
	Pattern     string `json:"pattern"`
	JournalMode string `json:"journal_mode"`
	Synchronous string `json:"synchronous"`
	Kind        string `json:"kind"`
	// SynchronousCommit is set on PostgreSQL only, where it stands for
	// JournalMode and Synchronous, which are then empty.
	SynchronousCommit string `json:"synchronous_commit,omitempty"`
	// Fsync, FullPageWrites and Model are set on a PostgreSQL power cut
	// only: the server's settings and what the cut leaves
	// (backend.PowerCell).
	Fsync          string `json:"fsync,omitempty"`
	FullPageWrites string `json:"full_page_writes,omitempty"`
	Model          string `json:"model,omitempty"`
}

// OnServer says whether the condition runs on PostgreSQL.
func (c Condition) OnServer() bool { return c.SynchronousCommit != "" }

// SettingName names the condition's setting: "DELETE/FULL" on SQLite,
// "synchronous_commit=off" on PostgreSQL.
func (c Condition) SettingName() string {
	if c.pgPower() {
		return backend.PowerCell{PowerSettings: c.power(), Model: c.Model}.Name()
	}
	if c.OnServer() {
		return "synchronous_commit=" + c.SynchronousCommit
	}
	return c.JournalMode + "/" + c.Synchronous
}

// settingOrder lists every setting name in the order tables show them:
// SQLite's journal modes and synchronous levels, then PostgreSQL's
// synchronous_commit levels.
func settingOrder() []string {
	var out []string
	for _, m := range sqlitedb.JournalModes {
		for _, s := range sqlitedb.SyncLevels {
			out = append(out, Condition{JournalMode: m, Synchronous: s}.SettingName())
		}
	}
	for _, sc := range store.SynchronousCommit {
		out = append(out, Condition{SynchronousCommit: sc}.SettingName())
	}
	for _, p := range backend.PowerCells(backend.OnOff, store.SynchronousCommit, backend.OnOff, backend.PowerModels) {
		out = append(out, p.Name())
	}
	return out
}

// kinds are the crash kinds of the settings' backend.
func (s Settings) kinds() []string {
	if s.Backend != "" && slices.ContainsFunc(s.Conditions, Condition.pgPower) {
		return append(slices.Clone(ServerKinds), KindPower)
	}
	if s.Backend != "" {
		return ServerKinds
	}
	return AllKinds
}

// Setting returns the durability model's view of the condition.
func (c Condition) Setting() Setting {
	return Setting{JournalMode: c.JournalMode, Synchronous: c.Synchronous, Kind: c.Kind, Exclusive: c.Pattern == PatternBatch}
}

// Requested is what every session of condition c must read back on
// PostgreSQL.
func (s Settings) Requested(c Condition) store.PGRequested {
	return store.PGRequested{Isolation: s.Isolation, SynchronousCommit: c.SynchronousCommit}
}

// spec is the backend spec of condition c's sessions: the run's, with the
// condition's synchronous_commit.
func (s Settings) spec(c Condition) backend.Spec {
	l, _ := s.Requested(c).Level()
	return backend.Spec{Name: s.Backend, Isolation: l.String(), SynchronousCommit: c.SynchronousCommit}
}

// Settings are recorded with the scenario; verify derives them again.
type Settings struct {
	EventID    string      `json:"event_id"`
	JobKey     string      `json:"job_key"`
	JobID      string      `json:"job_id"`
	Items      int         `json:"items"`
	Conditions []Condition `json:"conditions"`
	// BusyTimeoutMS is what every worker reads back on SQLite; the
	// journal mode and synchronous level come from the condition.
	BusyTimeoutMS int `json:"busy_timeout_ms,omitempty"`
	// Fault is the power cut's fault mode, faultvfs.FaultDrop or
	// FaultTorn. Under the torn mode every power trial runs FaultSeeds
	// times, the j-th with seed Seed+j, deciding units of FaultUnit bytes.
	Fault      string `json:"fault,omitempty"`
	FaultSeeds int    `json:"fault_seeds,omitempty"`
	FaultUnit  int    `json:"fault_unit,omitempty"`
	Seed       int64  `json:"seed,omitempty"`
	// SyncPoints: each condition also cuts inside every sync the normal
	// run made, just before and just after the fsync. On a PostgreSQL
	// power condition they are the power-loss mount's fsyncs of the
	// normal run's delivery (its recorded sync_window, backend.SyncWindow).
	SyncPoints bool `json:"sync_points,omitempty"`
	// SyncBound, when not 0, is how many fsyncs of a PostgreSQL power
	// condition's window the sweep cuts at, the first ones (--sync-bound).
	SyncBound int `json:"sync_bound,omitempty"`
	// PowerLayer is engine.LayerFS when the power cuts are made by the
	// power-loss filesystem (worker/powerfs, one mount per trial, under
	// the run's fault and DirModel, fsParams); empty for the VFS, the
	// default.
	PowerLayer string `json:"power_layer,omitempty"`
	// DirModel is the fs layer's directory model when given; empty is
	// strict POSIX (fsParams).
	DirModel string `json:"dir_model,omitempty"`
	// Shard is the part of the trials this run runs (--shard); nil runs
	// them all. Every condition's normal run, which discovers the points
	// and the syncs, runs in every part.
	Shard *shard.Part `json:"shard,omitempty"`
	// Backend is empty on SQLite and postgres on PostgreSQL, where
	// Isolation is the default_transaction_isolation every session reads
	// back (the server's words) and ServerSettings are what a run with
	// server crashes applies and reads back after each
	// (backend.CrashSettings).
	Backend        string            `json:"backend,omitempty"`
	Isolation      string            `json:"isolation,omitempty"`
	ServerSettings map[string]string `json:"server_settings,omitempty"`
	// WalSyncMethod and PowerQuiet are what every PostgreSQL power
	// trial's server runs with (backend.PowerQuiet); Seed is then the
	// torn model's seed.
	WalSyncMethod string   `json:"wal_sync_method,omitempty"`
	PowerQuiet    []string `json:"power_quiet,omitempty"`
}

// TrialID is a trial's id in the plan, as the engine gives a swept trial
// its id: "condition@key", the key as TrialKey gives it.
func (s Settings) TrialID(c Condition, tr TrialRef) string { return s.trial(c, tr).ID() }

// trial is trial tr of condition c as the engine plans it.
func (s Settings) trial(c Condition, tr TrialRef) engine.Trial {
	return engine.Trial{Condition: c.Name, Key: s.TrialKey(c, tr.Point, tr.Seed)}
}

// share keeps of a condition's trials in run order (Order) the normal
// run, first, which every part runs, and the others that keep gives.
func (s Settings) share(c Condition, order []TrialRef, keep func(id string) bool) []TrialRef {
	return slices.DeleteFunc(slices.Clone(order), func(tr TrialRef) bool { return tr != order[0] && !keep(s.TrialID(c, tr)) })
}

// Default torn-mode figures.
const (
	defaultFaultSeeds = 8
	maxFaultSeeds     = 64
	defaultSeed       = 1
)

// Torn says the power cuts tear unsynced writes.
func (s Settings) Torn() bool { return s.Fault == faultvfs.FaultTorn }

// Keep says the power cuts keep every write, synced or not, as after a
// process crash.
func (s Settings) Keep() bool { return s.Fault == faultvfs.FaultKeep }

// Seeds is how many times a condition runs each point: FaultSeeds for a
// power cut under the torn mode, once otherwise.
func (s Settings) Seeds(c Condition) int {
	if s.Torn() && c.Kind == KindPower {
		return s.FaultSeeds
	}
	return 1
}

// FaultOptions are the recovery options of the seed-th run of a power
// trial.
func (s Settings) FaultOptions(seed int) faultvfs.Options {
	if s.Keep() {
		return faultvfs.Options{Fault: faultvfs.FaultKeep}
	}
	if !s.Torn() {
		return faultvfs.Options{Fault: faultvfs.FaultDrop}
	}
	return faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: s.Seed + int64(seed), Unit: s.FaultUnit}
}

// faultFlags applies the fault flags to the input.
func faultFlags(in *Input, ov map[string]string, from map[string]string) error {
	if v, ok := ov[FlagFault]; ok {
		in.Fault, from["fault"] = strings.TrimSpace(v), "--"+FlagFault
	}
	if n, ok, err := scenario.IntFlag(ov, FlagFaultSeeds, 1, maxFaultSeeds); err != nil {
		return err
	} else if ok {
		in.FaultSeeds, from["fault_seeds"] = n, "--"+FlagFaultSeeds
	}
	if n, ok, err := scenario.IntFlag(ov, FlagFaultUnit, faultvfs.UnitSector, faultvfs.UnitPage); err != nil {
		return err
	} else if ok {
		in.FaultUnit, from["fault_unit"] = n, "--"+FlagFaultUnit
	}
	if v, ok := ov[FlagSeed]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("--%s %q: want a whole number from 0", FlagSeed, v)
		}
		in.Seed, from["seed"] = &n, "--"+FlagSeed
	}
	if v, ok := ov[FlagPowerLayer]; ok {
		in.PowerLayer, from["power_layer"] = strings.TrimSpace(v), "--"+FlagPowerLayer
	}
	if v, ok := ov[FlagDirModel]; ok {
		in.DirModel, from["dir_model"] = strings.TrimSpace(v), "--"+FlagDirModel
	}
	if b, ok, err := scenario.BoolFlag(ov, FlagSyncPoints); err != nil {
		return err
	} else if ok {
		in.SyncPoints, from["sync_points"] = b, "--"+FlagSyncPoints
	}
	if n, ok, err := scenario.IntFlag(ov, FlagSyncBound, 1, backend.MaxSyncBound); err != nil {
		return err
	} else if ok {
		in.SyncBound, from["sync_bound"] = n, "--"+FlagSyncBound
	}
	return nil
}

// faultSettings checks the fault mode's fields and fills the defaults. The
// torn mode's own fields make sense only with it, so given without it they
// are an error rather than silently ignored; the seed, a flag other
// scenarios share, is only unused.
func faultSettings(in Input, from map[string]string, st *Settings) error {
	name := func(field string) string { return fieldName(from, field) }
	st.Fault, st.SyncPoints = in.Fault, in.SyncPoints
	if err := layerSettings(in, name, st); err != nil {
		return err
	}
	switch in.Fault {
	case "", faultvfs.FaultDrop, faultvfs.FaultKeep:
		if in.Fault == "" {
			st.Fault = faultvfs.FaultDrop
		}
		// The seed is left alone: --seed is explore's and pattern's too,
		// and a run of several scenarios may well give it.
		for _, f := range []struct {
			field string
			set   bool
		}{{"fault_seeds", in.FaultSeeds != 0}, {"fault_unit", in.FaultUnit != 0}} {
			if f.set {
				return fmt.Errorf("%s: only with fault %q", name(f.field), faultvfs.FaultTorn)
			}
		}
		return nil
	case faultvfs.FaultTorn:
	default:
		return fmt.Errorf("%s: %q is not one of %s, %s, %s", name("fault"), in.Fault, faultvfs.FaultDrop, faultvfs.FaultKeep, faultvfs.FaultTorn)
	}
	st.FaultSeeds, st.FaultUnit, st.Seed = defaultFaultSeeds, faultvfs.UnitSector, defaultSeed
	if in.FaultSeeds != 0 {
		if in.FaultSeeds < 1 || in.FaultSeeds > maxFaultSeeds {
			return fmt.Errorf("%s %d: want 1 to %d", name("fault_seeds"), in.FaultSeeds, maxFaultSeeds)
		}
		st.FaultSeeds = in.FaultSeeds
	}
	if err := tornUnit(in, from, st); err != nil {
		return err
	}
	if in.Seed != nil {
		if *in.Seed < 0 {
			return fmt.Errorf("%s %d: want a whole number from 0", name("seed"), *in.Seed)
		}
		st.Seed = *in.Seed
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// sqliteOnly are the input fields that mean something on SQLite only, and
// why; a run on PostgreSQL refuses them rather than ignore them.
var sqliteOnly = []struct {
	field, why string
	set        func(Input) bool
}{
	{"journal_modes", "SQLite's journal_mode", func(in Input) bool { return len(in.JournalModes) > 0 }},
	{"synchronous", "SQLite's synchronous pragma", func(in Input) bool { return len(in.Synchronous) > 0 }},
	{"fault", "the power cut's fault mode in worker/faultvfs", func(in Input) bool { return in.Fault != "" }},
	{"fault_seeds", "the torn power cut's", func(in Input) bool { return in.FaultSeeds != 0 }},
}

// tornUnit checks the torn cut's unit and sets it when given: on SQLite
// the default is recorded (the sector), on PostgreSQL, whose folders
// recorded none before it, only a unit given is.
func tornUnit(in Input, from map[string]string, st *Settings) error {
	if in.FaultUnit == 0 {
		return nil
	}
	if in.FaultUnit != faultvfs.UnitSector && in.FaultUnit != faultvfs.UnitPage {
		return fmt.Errorf("%s %d: want %d or %d", fieldName(from, "fault_unit"), in.FaultUnit, faultvfs.UnitSector, faultvfs.UnitPage)
	}
	st.FaultUnit = in.FaultUnit
	return nil
}

// listField is a list of the input checked against its known values on
// the run's backend; refuse says why a value the other backend knows
// does not run on this one.
type listField struct {
	field string
	v     *[]string
	known []string
	// anyCase: SQLite reads these pragmas in any case; the settings
	// record them as the known list spells them.
	anyCase bool
	refuse  map[string]string
}

// settingsOf fills the defaults and derives the conditions on backend b:
// pattern × journal_mode × synchronous × kind on SQLite, pattern ×
// synchronous_commit × kind on PostgreSQL, where the SQLite-only fields
// are refused, each named with the reason. from maps an input field to
// the flag that set it, so an error names what the user typed: the input
// file has no durability section by default.
func settingsOf(b backend.Spec, in Input, from map[string]string) (Settings, error) {
	if err := defaults(&in); err != nil {
		return Settings{}, err
	}
	onServer := !b.IsSQLite()
	lists := []listField{{"patterns", &in.Patterns, AllPatterns, false, nil}}
	if onServer {
		for _, f := range sqliteOnly {
			if f.set(in) {
				return Settings{}, fmt.Errorf("%s: is %s; on --backend postgres the conditions vary synchronous_commit (durability.synchronous_commits, --%s)", fieldName(from, f.field), f.why, FlagSynchronousCommits)
			}
		}
		if len(in.Kinds) == 0 {
			in.Kinds = slices.Clone(ServerKinds) // the power kind is opt-in
		}
		lists = append(lists, listField{"synchronous_commits", &in.SynchronousCommits, store.SynchronousCommit, false, nil},
			listField{"kinds", &in.Kinds, append(slices.Clone(ServerKinds), KindPower), false, nil})
	} else {
		if len(in.SynchronousCommits) > 0 {
			return Settings{}, fmt.Errorf("%s: is PostgreSQL's synchronous_commit; it needs --backend postgres (SQLite's are journal_modes and synchronous)", fieldName(from, "synchronous_commits"))
		}
		lists = append(lists, listField{"journal_modes", &in.JournalModes, sqlitedb.JournalModes, true, nil},
			listField{"synchronous", &in.Synchronous, sqlitedb.SyncLevels, true, nil},
			listField{"kinds", &in.Kinds, AllKinds, false, map[string]string{KindServer: "crashes the PostgreSQL server; it needs --backend postgres (SQLite's kinds are " + strings.Join(AllKinds, ", ") + ")"}})
	}
	if err := checkLists(lists, from); err != nil {
		return Settings{}, err
	}
	st := Settings{EventID: in.EventID, JobKey: in.JobKey, JobID: in.JobID, Items: in.Items}
	if onServer {
		if err := pgPowerInput(&in, from, &st); err != nil {
			return Settings{}, err
		}
		name := func(field string) string { return fieldName(from, field) }
		if err := backend.CheckSweepInput(slices.Contains(in.Kinds, KindPower), in.SyncPoints, in.SyncBound, KindPower, name); err != nil {
			return Settings{}, err
		}
		st.SyncPoints, st.SyncBound = in.SyncPoints, in.SyncBound
	} else {
		for _, f := range []struct {
			field string
			set   bool
		}{{"fsync", len(in.Fsync) > 0}, {"full_page_writes", len(in.FullPageWrites) > 0}, {"power_models", len(in.PowerModels) > 0}, {"wal_sync_method", in.WalSyncMethod != ""}, {"sync_bound", in.SyncBound != 0}} {
			if f.set {
				return Settings{}, fmt.Errorf("%s: is PostgreSQL's power cut's; it needs --backend postgres and kind power", fieldName(from, f.field))
			}
		}
	}
	// The settings each condition runs under, in the known lists' order.
	var settings []Condition
	if onServer {
		st.Backend, st.Isolation = b.Name, b.Level().SQL()
		for _, sc := range store.SynchronousCommit {
			if slices.Contains(in.SynchronousCommits, sc) {
				settings = append(settings, Condition{SynchronousCommit: sc})
			}
		}
		if slices.Contains(in.Kinds, KindServer) {
			st.ServerSettings = backend.CrashSettings
		}
	} else {
		st.BusyTimeoutMS = busyTimeoutMS
		if err := faultSettings(in, from, &st); err != nil {
			return Settings{}, err
		}
		for _, m := range sqlitedb.JournalModes {
			for _, sy := range sqlitedb.SyncLevels {
				if slices.Contains(in.JournalModes, m) && slices.Contains(in.Synchronous, sy) {
					settings = append(settings, Condition{JournalMode: m, Synchronous: sy})
				}
			}
		}
	}
	// Run order follows the known lists, not the order given, so one set
	// of flags always gives one matrix.
	kinds := st.kinds()
	for _, p := range AllPatterns {
		for _, c := range settings {
			for _, k := range kinds {
				if slices.Contains(in.Patterns, p) && slices.Contains(in.Kinds, k) {
					c.Pattern, c.Kind = p, k
					c.Name = c.name()
					st.Conditions = append(st.Conditions, c)
				}
			}
			if onServer && slices.Contains(in.Patterns, p) && slices.Contains(in.Kinds, KindPower) {
				c.Pattern, c.Kind = p, KindPower
				st.Conditions = append(st.Conditions, pgPowerConditions(c, in)...)
			}
		}
	}
	if len(st.Conditions) == 0 {
		return Settings{}, errors.New("durability: the chosen lists give no condition")
	}
	return st, nil
}

// checkLists checks each list against its known values, filling an empty
// one with them, and records them as the known list spells them.
func checkLists(lists []listField, from map[string]string) error {
	for _, l := range lists {
		name := fieldName(from, l.field)
		if len(*l.v) == 0 {
			*l.v = slices.Clone(l.known)
		}
		for i, x := range *l.v {
			if why, ok := l.refuse[x]; ok {
				return fmt.Errorf("%s: %q %s", name, x, why)
			}
			k := slices.IndexFunc(l.known, func(k string) bool { return k == x || l.anyCase && strings.EqualFold(k, x) })
			if k < 0 {
				return fmt.Errorf("%s: %q is not one of %s", name, x, strings.Join(l.known, ", "))
			}
			(*l.v)[i] = l.known[k]
		}
		if dup := firstDup(*l.v); dup != "" {
			return fmt.Errorf("%s: %q is listed twice", name, dup)
		}
	}
	return nil
}

// defaults fills the input's defaults and checks the items, on either
// backend.
func defaults(in *Input) error {
	def := func(v *string, d string) {
		if strings.TrimSpace(*v) == "" {
			*v = d
		}
	}
	def(&in.EventID, "agent-run-042:completed")
	def(&in.JobKey, "review-agent-run-042")
	def(&in.JobID, "job-d")
	if err := protocol.CheckFields("durability", "event_id", in.EventID, "job_key", in.JobKey, "job_id", in.JobID); err != nil {
		return err
	}
	if in.Items == 0 {
		in.Items = 2
	}
	if in.Items < 1 || in.Items > 5 {
		return fmt.Errorf("durability.items %d: want 1 to 5", in.Items)
	}
	return nil
}

// fieldName names an input field as the user gave it: the flag that set
// it, or the input file's field.
func fieldName(from map[string]string, field string) string {
	if f, ok := from[field]; ok {
		return f
	}
	return "durability." + field
}

func firstDup(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// name is the condition's name: "pattern/MODE/SYNC/kind" on SQLite,
// "pattern/postgres/SYNCHRONOUS_COMMIT/kind" on PostgreSQL.
func (c Condition) name() string {
	if c.pgPower() {
		return c.Pattern + "/" + store.BackendPostgres + "/" + c.SynchronousCommit + "/" + c.Kind + "/" + c.Model + "/fsync-" + c.Fsync + "/fpw-" + c.FullPageWrites
	}
	if c.OnServer() {
		return c.Pattern + "/" + store.BackendPostgres + "/" + c.SynchronousCommit + "/" + c.Kind
	}
	return c.Pattern + "/" + c.JournalMode + "/" + c.Synchronous + "/" + c.Kind
}

// Conditions on the power-loss layers: a PostgreSQL power cut's cluster
// (backend.PowerTrial) and SQLite's fs layer (powerlayer.Trial).

// pgPower says whether c is a PostgreSQL power cut.
func (c Condition) pgPower() bool { return c.OnServer() && c.Kind == KindPower }

// cutOnFS says whether the engine plans c's cuts on its fs layer: SQLite's
// on --power-layer fs, and every PostgreSQL power cut.
func (s Settings) cutOnFS(c Condition) bool { return s.OnFS(c) || c.pgPower() }

// powerSettings are the server settings of a PostgreSQL power condition.
func (s Settings) powerSettings(c Condition) backend.PowerSettings {
	p := c.power()
	p.WalSyncMethod = s.WalSyncMethod
	return p
}

// pgParams are the cut's models of a PostgreSQL power condition: its
// model, strict POSIX directories, and under torn the run's seed and
// unit (fault_unit, the 512-byte sector unless set).
func (s Settings) pgParams(c Condition) powerfs.Params {
	return backend.CutParams(c.Model, s.Seed, s.FaultUnit)
}

// power is a PostgreSQL power condition's server settings, but the run's
// wal_sync_method (Settings.powerSettings).
func (c Condition) power() backend.PowerSettings {
	return backend.PowerSettings{Fsync: c.Fsync, SynchronousCommit: c.SynchronousCommit, FullPageWrites: c.FullPageWrites}
}

// pgPowerConditions expands a PostgreSQL power condition over fsync ×
// full_page_writes × model, in the known lists' order.
func pgPowerConditions(c Condition, in Input) []Condition {
	var out []Condition
	for _, p := range backend.PowerCells(in.Fsync, []string{c.SynchronousCommit}, in.FullPageWrites, in.PowerModels) {
		c.Fsync, c.FullPageWrites, c.Model = p.Fsync, p.FullPageWrites, p.Model
		c.Name = c.name()
		out = append(out, c)
	}
	return out
}

// pgPowerInput checks the input's PostgreSQL power lists and fills their
// defaults: set without the power kind, they are an error.
func pgPowerInput(in *Input, from map[string]string, st *Settings) error {
	power := slices.Contains(in.Kinds, KindPower)
	lists := []listField{{"fsync", &in.Fsync, backend.OnOff, false, nil}, {"full_page_writes", &in.FullPageWrites, backend.OnOff, false, nil},
		{"power_models", &in.PowerModels, backend.PowerModels, false, nil}}
	for _, l := range lists {
		if !power && len(*l.v) > 0 {
			return fmt.Errorf("%s: only with kind %s", fieldName(from, l.field), KindPower)
		}
	}
	if !power && in.FaultUnit != 0 {
		return fmt.Errorf("%s: on --backend postgres only with kind %s and power model %s", fieldName(from, "fault_unit"), KindPower, powerfs.ModelTorn)
	}
	if !power && in.WalSyncMethod != "" {
		return fmt.Errorf("%s: only with kind %s", fieldName(from, "wal_sync_method"), KindPower)
	}
	if !power {
		return nil
	}
	if err := checkLists(lists, from); err != nil {
		return err
	}
	if in.WalSyncMethod != "" && !slices.Contains(backend.WalSyncMethods, in.WalSyncMethod) {
		return fmt.Errorf("%s: %q is not one of %s", fieldName(from, "wal_sync_method"), in.WalSyncMethod, strings.Join(backend.WalSyncMethods, ", "))
	}
	if why := in.machine.FUSE; why != "" {
		return fmt.Errorf("%s %s: %s", fieldName(from, "kinds"), KindPower, why)
	}
	st.WalSyncMethod, st.PowerQuiet = in.WalSyncMethod, backend.PowerQuiet
	if !slices.Contains(in.PowerModels, powerfs.ModelTorn) {
		if in.FaultUnit != 0 {
			return fmt.Errorf("%s: only with power model %s", fieldName(from, "fault_unit"), powerfs.ModelTorn)
		}
		return nil
	}
	st.Seed = defaultSeed
	if in.Seed != nil {
		st.Seed = *in.Seed
	}
	return tornUnit(*in, from, st)
}

// pgSweeps says whether condition c is a PostgreSQL power condition that
// sweeps its mount's fsyncs.
func (s Settings) pgSweeps(c Condition) bool { return s.SyncPoints && c.pgPower() }

// mountSyncCut says whether a trial of condition c at point is a cut at
// a power-loss mount's fsync, the parent's to make (the first process is
// told no cut of its own): on the fs layer (fsSyncCut) or on a
// PostgreSQL power condition's cluster.
func (s Settings) mountSyncCut(c Condition, point string) (protocol.SyncCut, bool) {
	if s.pgSweeps(c) {
		return ParseSyncPoint(point)
	}
	return s.fsSyncCut(c, point)
}

// pgFrozen says whether a trial of condition c at point is a PostgreSQL
// power trial whose server the mount froze at an fsync: the parent reads
// nothing before its cut (Before is empty).
func (s Settings) pgFrozen(c Condition, point string) bool {
	_, ok := s.mountSyncCut(c, point)
	return ok && s.pgSweeps(c)
}

// cutAt is the sync cut a PostgreSQL power trial's cluster is started
// with: the mount freezes at the point's fsync, before or after it; none
// (0) for any other trial.
func (s Settings) cutAt(c Condition, point string) (n int, after bool) {
	if cut, ok := s.mountSyncCut(c, point); ok && c.pgPower() {
		return cut.N, cut.After
	}
	return 0, false
}

// OnFS says whether condition c's power cuts are made by the filesystem.
func (s Settings) OnFS(c Condition) bool {
	return s.PowerLayer == engine.LayerFS && c.Kind == KindPower && !c.OnServer()
}

// fsParams are the models of the fs layer's trial with seed index seed:
// the ones the VFS layer's cut would be made under (FaultOptions).
func (s Settings) fsParams(seed int) powerfs.Params {
	return powerlayer.ParamsOf(s.FaultOptions(seed), s.DirModel)
}

// fsSyncCut says whether a trial of condition c at point is a cut at a
// sync of the fs layer's mount: at the filesystem's N-th fsync (of a file
// or a directory), not the VFS's N-th xSync, counted over the normal run's
// mount (fsSyncs). The mount freezes there and the harness kills the
// first process (which is told no cut of its own) before the cut.
func (s Settings) fsSyncCut(c Condition, point string) (protocol.SyncCut, bool) {
	if !s.OnFS(c) {
		return protocol.SyncCut{}, false
	}
	return ParseSyncPoint(point)
}

// firstEnv is the first process's environment (FirstEnv), without the
// VFS's cut at a sync where the mount makes it (fsSyncCut).
func (s Settings) firstEnv(c Condition, point string) map[string]string {
	e := FirstEnv(c, point)
	if _, ok := s.fsSyncCut(c, point); ok {
		delete(e, protocol.EnvCutAtSync)
	}
	return e
}

// layerSettings checks the power layer: the fs layer cuts under the run's
// fault (drop or torn, faultSettings checks which), at the named points,
// after the ACK and with sync points at the mount's fsyncs (fsSyncCut),
// and needs FUSE on the run's machine as the plan request records
// it (in.machine), never as this machine probes.
func layerSettings(in Input, name func(string) string, st *Settings) error {
	switch in.PowerLayer {
	case "", engine.LayerVFS:
		if in.DirModel != "" {
			return fmt.Errorf("%s: only with %s %s", name("dir_model"), name("power_layer"), engine.LayerFS)
		}
		return nil
	case engine.LayerFS:
	default:
		return fmt.Errorf("%s: %q is not one of %s", name("power_layer"), in.PowerLayer, strings.Join(engine.PowerLayers, ", "))
	}
	switch in.DirModel {
	case "", powerfs.DirPOSIX, powerfs.DirExt4:
		st.DirModel = in.DirModel
	default:
		return fmt.Errorf("%s: %q is not one of %s, %s", name("dir_model"), in.DirModel, powerfs.DirPOSIX, powerfs.DirExt4)
	}
	if why := in.machine.FUSE; why != "" {
		return fmt.Errorf("%s %s: %s", name("power_layer"), engine.LayerFS, why)
	}
	st.PowerLayer = engine.LayerFS
	return nil
}
