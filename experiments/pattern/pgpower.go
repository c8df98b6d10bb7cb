package pattern

// A pattern file's power class on PostgreSQL (--backend postgres --faults
// power, opt-in): each power trial runs on a throwaway cluster of its own
// whose data folder lives on a power-loss mount (backend.PowerCluster),
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
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/store"
)

// pgPowerPrefix starts a power condition's setting on PostgreSQL.
const pgPowerPrefix = "fsync="

// pgPowerSetting is the one power setting of a run on PostgreSQL: its
// synchronous_commit, fsync and full_page_writes on.
func pgPowerSetting(r *store.PGRequested) string {
	sc := "on"
	if r != nil && r.SynchronousCommit != "" {
		sc = r.SynchronousCommit
	}
	return pgPowerPrefix + "on,synchronous_commit=" + sc + ",full_page_writes=on"
}

// onServerPower says whether c is a power condition on PostgreSQL.
func onServerPower(c Condition) bool { return strings.HasPrefix(c.Power, pgPowerPrefix) }

// pgPowerSettings are the server settings of power condition c.
func pgPowerSettings(c Condition) backend.PowerSettings {
	s := backend.PowerSettings{}
	for _, kv := range strings.Split(c.Power, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "fsync":
			s.Fsync = v
		case "synchronous_commit":
			s.SynchronousCommit = v
		case "full_page_writes":
			s.FullPageWrites = v
		}
	}
	return s
}

// pgPowerParams are the cut's models of PostgreSQL power trial o: its
// model, strict POSIX directories, and under torn its seed and 512-byte
// units.
func pgPowerParams(s Settings, o Observation) powerfs.Params {
	p := powerfs.Params{Model: modelName(o.Model), DirModel: powerfs.DirPOSIX, Unit: faultvfs.UnitSector}
	if p.Model == powerfs.ModelTorn {
		p.Seed = seed.TornSeed(s.Seed, o.Condition, o.Trial)
	}
	return p
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
	for _, m := range o.Check(pgPowerSettings(t.c), pgPowerParams(f.st, t.o)) {
		f.c.Obs(t.l, "pg_power."+m.Field, "%s", m.Text)
	}
	if !o.Started {
		f.c.Obs(t.l, "pg_power.started", "false: the server did not start on the folder the cut left, with fsync on")
	}
	if o.Corrupt() {
		f.c.Obs(t.l, "pg_power.amcheck", "the recovered cluster is damaged (amcheck %v, %d checksum failures, rejected pages %v), with fsync and full_page_writes on", o.Amcheck, o.ChecksumFailures, o.Rejected)
	}
}
