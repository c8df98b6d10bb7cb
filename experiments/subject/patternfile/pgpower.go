package patternfile

// A pattern file's power class on PostgreSQL (--backend postgres --faults
// power, opt-in): each power trial runs on a throwaway cluster of its own
// whose data folder lives on a power-loss mount (backend.PowerTrial),
// with data checksums and the condition's fsync, synchronous_commit and
// full_page_writes (by default fsync and full_page_writes on and the run's
// synchronous_commit; --fsync, --synchronous-commits and
// --full-page-writes make a matrix of them); every session asks for the
// condition's synchronous_commit too. The first
// delivery runs to its point, its ACK or its ACK with the connection
// open; the parent then cuts the power under the trial's model (drop, keep
// or torn), the server restarts on the rebuilt folder and runs WAL
// recovery, and the redeliveries and the invariants run on the recovered
// server. The trial records the cut (pg_power): the server's settings and
// what the recovered server read back, the mount's op log and the cut the
// fold derives again from it, amcheck and the checksum failures.

import (
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/seed"
	wp "idemlab/worker/pattern"
	"idemlab/worker/powerfs"
	"idemlab/worker/store"
)

// onServerPower says whether c is a power condition on PostgreSQL.
func onServerPower(c Condition) bool { return strings.HasPrefix(c.Power, backend.PowerNamePrefix) }

// powerParams are the cut's models of power trial o, on the filesystem
// under a program or a PostgreSQL cluster: its model, strict POSIX
// directories, and under torn the trial's own seed and the run's unit.
func powerParams(s Settings, o Observation) powerfs.Params {
	return backend.CutParams(modelName(o.Model), seed.TornSeed(s.Seed, o.Condition, o.Trial), s.FaultUnit)
}

// pgSpec is the backend spec of condition c's sessions, from the run's
// settings: on a power condition with the condition's synchronous_commit.
func (s Settings) pgSpec(c Condition) backend.Spec {
	sp := backend.Spec{Name: store.BackendPostgres}
	if r := s.requested(c); r != nil {
		l, _ := r.Level()
		sp.Isolation, sp.SynchronousCommit = l.String(), r.SynchronousCommit
	}
	return sp
}

// requested is what every session of condition c must read back: the
// run's settings, with a power condition's synchronous_commit.
func (s Settings) requested(c Condition) *store.PGRequested {
	if s.Postgres == nil || !onServerPower(c) {
		return s.Postgres
	}
	r := *s.Postgres
	r.SynchronousCommit = backend.ParsePowerName(c.Power).SynchronousCommit
	return &r
}

// pgPowerSchema is the schema a PostgreSQL power trial's tables live in.
const pgPowerSchema = "idemlab_pattern"

// checkPGPower checks a PostgreSQL power trial's record: the condition's
// server settings, as recorded and as the recovered server read them
// back, the trial's models, and the cut powerfs.Plan derives again from
// the op log.
func (f *folder) checkPGPower(t *trialLine) {
	o := t.o.PGPower
	if o == nil {
		f.c.Obs(t.l, "pg_power", "missing: a power trial on PostgreSQL records its cut")
		return
	}
	want := backend.ParsePowerName(t.c.Power)
	for _, m := range o.Check(want, powerParams(f.st, t.o)) {
		f.c.Obs(t.l, "pg_power."+m.Field, "%s", m.Text)
	}
	backend.FoldPostmaster(&f.c, f.rec, t.l, *o, want)
	// PostgreSQL's documentation: with fsync off anything may come of a
	// cut, a server that does not start too; with full_page_writes off a
	// torn cut may leave a page the checksums reject; otherwise the
	// recovered cluster starts and is sound.
	if want.Fsync == "off" {
		return
	}
	if !o.Started {
		f.c.Obs(t.l, "pg_power.started", "false: the server did not start on the folder the cut left, with fsync on")
	}
	if o.Corrupt() && !(want.FullPageWrites == "off" && t.o.Model == powerfs.ModelTorn) {
		f.c.Obs(t.l, "pg_power.amcheck", "the recovered cluster is damaged (amcheck %v, %d checksum failures, rejected pages %v), with fsync on and full_page_writes %s under %s", o.Amcheck, o.ChecksumFailures, o.Rejected, want.FullPageWrites, modelName(t.o.Model))
	}
}

// NoServer is the error every invariant of a PostgreSQL power trial reads
// when the server did not start on the folder the cut left.
const NoServer = "the server did not start on the folder the power cut left"

// noServerValues are the invariants' values of such a trial: each query's
// an error, NoServer.
func noServerValues(f wp.File) map[string]wp.Value {
	out := map[string]wp.Value{}
	for _, iv := range f.Invariants {
		if iv.Query != "" {
			out[iv.Name] = wp.Value{Error: NoServer}
		}
	}
	return out
}
