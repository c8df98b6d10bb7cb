// Package backend is the database a run's workers use: SQLite files, the
// default, or PostgreSQL, either a throwaway cluster the run starts and
// removes itself or an existing server named by a connection string. It
// resolves the choice from the input file's backend section and the
// flags, starts and stops what the run needs, and hands each condition a
// fresh database. What differs in SQL between the two is worker/store's
// dialect, not this package's.
package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"idemlab/worker/store"
)

// Section is the input file's top-level "backend" section, beside the
// scenario sections.
type Section struct {
	// Name is sqlite (the default) or postgres.
	Name string `json:"name"`
	// Isolation is PostgreSQL's default_transaction_isolation, by its
	// command-line name: read-committed (the default), repeatable-read or
	// serializable.
	Isolation string `json:"isolation,omitempty"`
	// SynchronousCommit is PostgreSQL's synchronous_commit: on (the
	// default), local or off.
	SynchronousCommit string `json:"synchronous_commit,omitempty"`
}

// SectionName is the section's key in the input file.
const SectionName = "backend"

// Flags that choose the backend. The first three are recorded with every
// scenario's overrides, since they change what the scenario's settings
// say; --dsn and --keep say where the run's database lives and whether it
// stays, which no result depends on.
const (
	FlagBackend           = "backend"
	FlagIsolation         = "isolation"
	FlagSynchronousCommit = "synchronous-commit"
	FlagDSN               = "dsn"
	FlagKeep              = "keep"
)

// RecordedFlags are the flags Resolve reads from the overrides.
var RecordedFlags = []string{FlagBackend, FlagIsolation, FlagSynchronousCommit}

// Defaults for PostgreSQL: the server's own. The level is named by
// store's one spelling of it.
var DefaultIsolation = store.ReadCommitted.String()

// DefaultSynchronousCommit is PostgreSQL's default synchronous_commit.
const DefaultSynchronousCommit = "on"

// Spec is the backend a run asks for: what a scenario's settings record.
type Spec struct {
	Name              string
	Isolation         string
	SynchronousCommit string
	// IsolationChosen says the isolation came from the input's section or
	// --isolation rather than the default: a scenario that runs every
	// level in one run (explore) runs that one level alone.
	IsolationChosen bool
}

// SQLite is the default backend.
var SQLite = Spec{Name: store.BackendSQLite}

// IsSQLite says whether the spec is SQLite's.
func (s Spec) IsSQLite() bool { return s.Name == store.BackendSQLite }

// Level is the spec's isolation level; none when it names none.
func (s Spec) Level() store.Isolation {
	l, _ := store.ParseIsolation(s.Isolation)
	return l
}

// Levels are the isolation levels, by name, of a run on the spec that
// covers every level (explore): every level, or the one the input's
// section or --isolation chose.
func (s Spec) Levels() []string {
	var out []string
	for _, l := range store.Isolations {
		if !s.IsolationChosen || l == s.Level() {
			out = append(out, l.String())
		}
	}
	return out
}

// Session is what the spec asks of a session to schema on the database
// base names.
func (s Spec) Session(base, schema string) store.Session {
	return store.Session{Base: base, Schema: schema, Isolation: s.Level(), SynchronousCommit: s.SynchronousCommit}
}

// Requested is what every PostgreSQL session must read back, in the
// server's own words; nil for SQLite.
func (s Spec) Requested() *store.PGRequested {
	if s.IsSQLite() {
		return nil
	}
	r := s.Session("", "").Requested()
	return &r
}

// String names the spec in one phrase, as a table title says it.
func (s Spec) String() string {
	if s.IsSQLite() {
		return "SQLite"
	}
	return fmt.Sprintf("PostgreSQL, %s, synchronous_commit %s", s.Level().SQL(), s.SynchronousCommit)
}

// Resolve reads the backend from the input's section (empty when the file
// has none) and the recorded flags among overrides, the flags winning.
// Errors name the field or the flag.
func Resolve(section json.RawMessage, overrides map[string]string) (Spec, error) {
	var sec Section
	if len(section) > 0 && string(section) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(section)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sec); err != nil {
			return Spec{}, fmt.Errorf("%s: %w (fields: name, isolation, synchronous_commit)", SectionName, err)
		}
	}
	field := map[string]string{FlagBackend: SectionName + ".name", FlagIsolation: SectionName + ".isolation", FlagSynchronousCommit: SectionName + ".synchronous_commit"}
	val := map[string]string{FlagBackend: sec.Name, FlagIsolation: sec.Isolation, FlagSynchronousCommit: sec.SynchronousCommit}
	for _, f := range RecordedFlags {
		if v, ok := overrides[f]; ok {
			val[f], field[f] = v, "--"+f
		}
	}
	name, err := store.ParseBackend(val[FlagBackend])
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", field[FlagBackend], err)
	}
	spec := Spec{Name: name}
	if spec.IsSQLite() {
		for _, f := range []string{FlagIsolation, FlagSynchronousCommit} {
			if val[f] != "" {
				return Spec{}, fmt.Errorf("%s: is PostgreSQL's, but the backend is sqlite; SQLite's durability is chosen by the scenarios' own settings", field[f])
			}
		}
		return spec, nil
	}
	spec.Isolation, spec.SynchronousCommit = DefaultIsolation, DefaultSynchronousCommit
	if v := val[FlagIsolation]; v != "" {
		l, err := store.ParseIsolation(v)
		if err != nil {
			return Spec{}, fmt.Errorf("%s %q: want one of %s", field[FlagIsolation], v, store.IsolationNames())
		}
		spec.Isolation, spec.IsolationChosen = l.String(), true
	}
	if v := val[FlagSynchronousCommit]; v != "" {
		if !contains(store.SynchronousCommit, v) {
			return Spec{}, fmt.Errorf("%s %q: want one of %s", field[FlagSynchronousCommit], v, strings.Join(store.SynchronousCommit, ", "))
		}
		spec.SynchronousCommit = v
	}
	return spec, nil
}

// Split takes the recorded backend flags out of a run's overrides: the
// rest are the scenarios' own.
func Split(overrides map[string]string) (backendFlags, rest map[string]string) {
	backendFlags, rest = map[string]string{}, map[string]string{}
	for k, v := range overrides {
		if contains(RecordedFlags, k) {
			backendFlags[k] = v
		} else {
			rest[k] = v
		}
	}
	return backendFlags, rest
}

// ErrNotOnBackend is a scenario refusing a backend it cannot run on.
var ErrNotOnBackend = errors.New("cannot run on")

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// IsTarget says whether target is what a condition's workers open on
// backend b: a file named file on SQLite, a connection string that names
// the condition's schema on PostgreSQL.
func IsTarget(b, target, file string) bool {
	if b == store.BackendPostgres {
		return strings.Contains(target, "search_path=")
	}
	return filepath.Base(target) == file
}

// TargetKind says in words what IsTarget wants.
func TargetKind(b, file string) string {
	if b == store.BackendPostgres {
		return "PostgreSQL connection string naming the condition's schema (search_path)"
	}
	return "file named " + file
}

// CheckReadBack compares what a PostgreSQL session read back with what
// the settings requested, and says how they differ; "" when they agree or
// when neither is PostgreSQL.
func CheckReadBack(want *store.PGRequested, got *store.PGSettings) string {
	switch {
	case want == nil && got == nil:
		return ""
	case want == nil:
		return "the worker reports PostgreSQL settings, but the run is on SQLite"
	case got == nil:
		return fmt.Sprintf("the worker reports no PostgreSQL settings, but the run is on PostgreSQL with %s", compact(*want))
	case !want.Matches(got.Requested()):
		return fmt.Sprintf("the worker's session read back %s, the settings require %s", compact(got.Requested()), compact(*want))
	}
	return ""
}

func compact(r store.PGRequested) string {
	return fmt.Sprintf("default_transaction_isolation=%q synchronous_commit=%q", r.Isolation, r.SynchronousCommit)
}

// DatabaseRow is a report's settings row of the database a run's workers
// used: on PostgreSQL (want set) what the sessions were asked for and read
// back (Describe), else SQLite's own settings in words.
func DatabaseRow(want *store.PGRequested, got *store.PGSettings, sqlite string) [2]string {
	if want != nil {
		return [2]string{"PostgreSQL", Describe(*want, got)}
	}
	return [2]string{"SQLite", sqlite}
}

// Describe is the settings row of a PostgreSQL run: what was requested
// and, when a worker reported it, what the server read back.
func Describe(want store.PGRequested, got *store.PGSettings) string {
	s := fmt.Sprintf("default_transaction_isolation=%s, synchronous_commit=%s", want.Isolation, want.SynchronousCommit)
	if got != nil {
		s += fmt.Sprintf("; read back from server %s: fsync=%s, wal_level=%s", got.ServerVersion, got.Fsync, got.WalLevel)
	}
	return s
}
