package pattern

// A pattern file's power class on PostgreSQL (--backend postgres --faults
// power, opt-in): each power trial runs on a throwaway cluster of its own
// whose data folder lives on a power-loss mount (backend.PowerTrial),
// with data checksums, fsync and full_page_writes on, and the run's
// synchronous_commit, which every session asks for too. The first
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
	"idemlab/worker/powerfs"
	"idemlab/worker/store"
)

// pgPowerSetting is the one power setting of a run on PostgreSQL: its
// synchronous_commit, fsync and full_page_writes on.
func pgPowerSetting(r *store.PGRequested) string {
	sc := "on"
	if r != nil && r.SynchronousCommit != "" {
		sc = r.SynchronousCommit
	}
	return backend.PowerSettings{Fsync: "on", SynchronousCommit: sc, FullPageWrites: "on"}.Name()
}

// onServerPower says whether c is a power condition on PostgreSQL.
func onServerPower(c Condition) bool { return strings.HasPrefix(c.Power, backend.PowerNamePrefix) }

// powerParams are the cut's models of power trial o, on the filesystem
// under a program or a PostgreSQL cluster: its model, strict POSIX
// directories, 512-byte units, and under torn the trial's own seed.
func powerParams(s Settings, o Observation) powerfs.Params {
	return backend.CutParams(modelName(o.Model), seed.TornSeed(s.Seed, o.Condition, o.Trial))
}

// pgSpec is the backend spec of the run's sessions, from its settings.
func (s Settings) pgSpec() backend.Spec {
	sp := backend.Spec{Name: store.BackendPostgres}
	if s.Postgres != nil {
		l, _ := s.Postgres.Level()
		sp.Isolation, sp.SynchronousCommit = l.String(), s.Postgres.SynchronousCommit
	}
	return sp
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
	if !o.Started {
		f.c.Obs(t.l, "pg_power.started", "false: the server did not start on the folder the cut left, with fsync on")
	}
	if o.Corrupt() {
		f.c.Obs(t.l, "pg_power.amcheck", "the recovered cluster is damaged (amcheck %v, %d checksum failures, rejected pages %v), with fsync and full_page_writes on", o.Amcheck, o.ChecksumFailures, o.Rejected)
	}
}
