package durability

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	wb "idemlab/worker/batch"
	wc "idemlab/worker/claim"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// On PostgreSQL (--backend postgres) the matrix is pattern ×
// synchronous_commit × kind. A kill stops the worker at its point, and the
// server rolls back what it had not committed. A server crash (KindServer)
// runs the worker to its point or its ACK, then SIGKILLs every process of
// the server, restarts it and lets recovery run, and only then lets the
// pattern go on: PostgreSQL's counterpart of SQLite's power cut, where
// synchronous_commit decides what an acknowledged commit is worth.

// ServerPatterns are the patterns whose workers run on PostgreSQL: every
// one, since the redelivery worker, the batch run and resolve and
// explore's claim all open their database through worker/store.
var ServerPatterns = AllPatterns

// ServerKinds are the crash kinds on PostgreSQL, in run order.
var ServerKinds = []string{KindKill, KindServer}

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
	{"fault_unit", "the torn power cut's", func(in Input) bool { return in.FaultUnit != 0 }},
	{"sync_points", "cuts inside SQLite's syncs, through worker/faultvfs", func(in Input) bool { return in.SyncPoints }},
}

// serverSettingsOf derives the settings of a run on PostgreSQL backend b.
// The SQLite-only fields are refused, each named with the reason.
func serverSettingsOf(b backend.Spec, in Input, from map[string]string) (Settings, error) {
	if err := defaults(&in); err != nil {
		return Settings{}, err
	}
	for _, f := range sqliteOnly {
		if f.set(in) {
			return Settings{}, fmt.Errorf("%s: is %s; on --backend postgres the conditions vary synchronous_commit (durability.synchronous_commits, --%s)", fieldName(from, f.field), f.why, FlagSynchronousCommits)
		}
	}
	lists := []struct {
		field string
		v     *[]string
		known []string
		// why says why a name the SQLite run knows is refused here.
		why map[string]string
	}{
		{"patterns", &in.Patterns, ServerPatterns, nil},
		{"synchronous_commits", &in.SynchronousCommits, store.SynchronousCommit, nil},
		{"kinds", &in.Kinds, ServerKinds, map[string]string{KindPower: "it is SQLite's power cut through worker/faultvfs; PostgreSQL's counterpart is the server kind"}},
	}
	for _, l := range lists {
		name := fieldName(from, l.field)
		if len(*l.v) == 0 {
			*l.v = slices.Clone(l.known)
		}
		for _, x := range *l.v {
			if why, ok := l.why[x]; ok {
				return Settings{}, fmt.Errorf("%s: %q does not run on --backend postgres: %s", name, x, why)
			}
			if !slices.Contains(l.known, x) {
				return Settings{}, fmt.Errorf("%s: %q is not one of %s", name, x, strings.Join(l.known, ", "))
			}
		}
		if dup := firstDup(*l.v); dup != "" {
			return Settings{}, fmt.Errorf("%s: %q is listed twice", name, dup)
		}
	}
	st := Settings{EventID: in.EventID, JobKey: in.JobKey, JobID: in.JobID, Items: in.Items, Backend: b.Name, Isolation: b.Requested().Isolation}
	for _, p := range ServerPatterns {
		for _, sc := range store.SynchronousCommit {
			for _, k := range ServerKinds {
				if slices.Contains(in.Patterns, p) && slices.Contains(in.SynchronousCommits, sc) && slices.Contains(in.Kinds, k) {
					st.Conditions = append(st.Conditions, Condition{Name: ServerConditionName(p, sc, k), Pattern: p, SynchronousCommit: sc, Kind: k})
				}
			}
		}
	}
	if slices.Contains(in.Kinds, KindServer) {
		st.ServerSettings = backend.CrashSettings
	}
	return st, nil
}

// ServerConditionName is "pattern/postgres/SYNCHRONOUS_COMMIT/kind".
func ServerConditionName(pattern, sc, kind string) string {
	return pattern + "/" + store.BackendPostgres + "/" + sc + "/" + kind
}

// Requested is what every session of condition c must read back on
// PostgreSQL.
func (s Settings) Requested(c Condition) store.PGRequested {
	return store.PGRequested{Isolation: s.Isolation, SynchronousCommit: c.SynchronousCommit}
}

// spec is the backend spec of condition c's sessions: the run's, with the
// condition's synchronous_commit.
func (s Settings) spec(c Condition) backend.Spec {
	iso := ""
	for k, v := range store.IsolationLevels {
		if v == s.Isolation {
			iso = k
		}
	}
	return backend.Spec{Name: s.Backend, Isolation: iso, SynchronousCommit: c.SynchronousCommit}
}

// ServerSchema is the DDL of a pattern's tables on PostgreSQL, which the
// parent makes and flushes before a trial's first process.
func ServerSchema(pattern string) (string, error) {
	switch pattern {
	case PatternBatch:
		return wb.SchemaOn(store.Postgres{}), nil
	case PatternClaim:
		return wc.DDL(wc.SchemaNew)
	}
	return wr.Schema, nil
}

// onServer places a trial on PostgreSQL: its shape, the commits its first
// process made (the pattern's logical model's, ShapeOf) and how many of
// them the server kept. A kill keeps every one: the server rolls back only
// what was not committed. A server crash keeps them too under
// synchronous_commit on and local, which flush the WAL before a commit
// returns; under off, with the writers frozen since before the worker
// started (backend.PrepareCrash), it loses every one, acknowledged or not
// (backend.CrashLoses).
func onServer(c Condition, items int, point string) (sh Shape, made, kept int, err error) {
	if point == PointACKOpen || point == PointACKReader {
		return Shape{}, 0, 0, fmt.Errorf("%s: point %q is SQLite's", c.Name, point)
	}
	if sh, err = ShapeOf(c.Pattern, items, point); err != nil {
		return Shape{}, 0, 0, err
	}
	made, kept = sh.Process.Commits, sh.Process.Commits
	if c.Kind == KindServer && backend.CrashLoses(c.SynchronousCommit) {
		kept = 0
	}
	return sh, made, kept, nil
}

// wantOnServer is the oracle for a trial on PostgreSQL, from the settings
// alone: what the pattern then makes of the rows the server kept is the
// same model the SQLite trials use (outcomeOf, rowsLost). For the batch
// journal a send whose notify IN_FLIGHT mark the crash took back is sent
// again by the resume, and the receiver accepts it a second time, as the
// run sends no Idempotency-Key (BatchIdempotencyKey); for the claim, a
// claim row the crash took back lets the probe win inside the TTL: a
// second winner.
func wantOnServer(c Condition, items int, point string) (Want, error) {
	sh, made, kept, err := onServer(c, items, point)
	if err != nil {
		return Want{}, err
	}
	return Want{Outcome: outcomeOf(c.Pattern, items, sh, made, made-kept), RowsLost: rowsLost(c.Pattern, made, kept), Recovered: []string{}}, nil
}

// mayHoldOnServer says whether the journal the batch's resume opens after
// a trial on PostgreSQL holds a notify IN_FLIGHT: whether the last commit
// the server kept is one.
func mayHoldOnServer(c Condition, items int, point string) (bool, error) {
	if c.Pattern != PatternBatch {
		return false, nil
	}
	_, _, kept, err := onServer(c, items, point)
	if err != nil {
		return false, err
	}
	for i := 1; i <= items; i++ {
		if notifyInFlight(i) == kept {
			return true, nil
		}
	}
	return false, nil
}
