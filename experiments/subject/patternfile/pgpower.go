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
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/seed"
	wp "idemlab/worker/pattern"
	"idemlab/worker/powerfs"
	"idemlab/worker/store"
)

// The PostgreSQL power matrix's flags, shared with durability's.
const (
	FlagFsync              = "fsync"
	FlagSynchronousCommits = "synchronous-commits"
	FlagFullPageWrites     = "full-page-writes"
)

// PGMatrix are the values of the PostgreSQL power matrix a run asked
// for; an empty list keeps the run's one setting's value (fsync and
// full_page_writes on, the run's synchronous_commit).
type PGMatrix struct {
	Fsync, SynchronousCommit, FullPageWrites []string
}

// Override reads the matrix's flags, comma lists.
func (m *PGMatrix) Override(ov map[string]string) {
	for flag, dst := range map[string]*[]string{FlagFsync: &m.Fsync, FlagSynchronousCommits: &m.SynchronousCommit, FlagFullPageWrites: &m.FullPageWrites} {
		if v, ok := ov[flag]; ok {
			*dst = nil
			for _, x := range strings.Split(v, ",") {
				*dst = append(*dst, strings.TrimSpace(x))
			}
		}
	}
}

// Check refuses a matrix on SQLite or without the power class, and values
// PostgreSQL does not take, each at most once.
func (m PGMatrix) Check(on backend.Spec, power bool) error {
	for _, l := range []struct {
		flag      string
		got, want []string
	}{{FlagFsync, m.Fsync, onOff}, {FlagSynchronousCommits, m.SynchronousCommit, store.SynchronousCommit}, {FlagFullPageWrites, m.FullPageWrites, onOff}} {
		if len(l.got) == 0 {
			continue
		}
		if on.IsSQLite() || !power {
			return fmt.Errorf("%w: --%s: only with --backend postgres --faults power", errclass.ErrUsage, l.flag)
		}
		for i, v := range l.got {
			if !slices.Contains(l.want, v) || slices.Index(l.got, v) != i {
				return fmt.Errorf("%w: --%s: %q: want each of %s at most once", errclass.ErrUsage, l.flag, v, strings.Join(l.want, ", "))
			}
		}
	}
	return nil
}

// onOff are fsync's and full_page_writes' values.
var onOff = []string{"on", "off"}

// pgPowerSettings are the power settings of a run on PostgreSQL: fsync ×
// synchronous_commit × full_page_writes over the matrix's values in their
// known order, an empty list standing for the run's one value (fsync and
// full_page_writes on, the run's synchronous_commit).
func pgPowerSettings(r *store.PGRequested, m PGMatrix) []string {
	sc := "on"
	if r != nil && r.SynchronousCommit != "" {
		sc = r.SynchronousCommit
	}
	or := func(l []string, def string, order []string) []string {
		if len(l) == 0 {
			return []string{def}
		}
		return slices.DeleteFunc(slices.Clone(order), func(v string) bool { return !slices.Contains(l, v) })
	}
	var out []string
	for _, fs := range or(m.Fsync, "on", onOff) {
		for _, c := range or(m.SynchronousCommit, sc, store.SynchronousCommit) {
			for _, fpw := range or(m.FullPageWrites, "on", onOff) {
				out = append(out, backend.PowerSettings{Fsync: fs, SynchronousCommit: c, FullPageWrites: fpw}.Name())
			}
		}
	}
	return out
}

// onServerPower says whether c is a power condition on PostgreSQL.
func onServerPower(c Condition) bool { return strings.HasPrefix(c.Power, backend.PowerNamePrefix) }

// powerParams are the cut's models of power trial o, on the filesystem
// under a program or a PostgreSQL cluster: its model, strict POSIX
// directories, 512-byte units, and under torn the trial's own seed.
func powerParams(s Settings, o Observation) powerfs.Params {
	return backend.CutParams(modelName(o.Model), seed.TornSeed(s.Seed, o.Condition, o.Trial))
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
