package backend

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/errclass"
	"idemlab/worker/store"
)

// The PostgreSQL power matrix's flags, as pattern and durability spell
// them.
const (
	FlagFsync              = "fsync"
	FlagSynchronousCommits = "synchronous-commits"
	FlagFullPageWrites     = "full-page-writes"
)

// PowerMatrix are the values of the PostgreSQL power matrix a run asked
// for (fsync × synchronous_commit × full_page_writes); an empty list keeps
// the run's one setting's value (fsync and full_page_writes on, the run's
// synchronous_commit).
type PowerMatrix struct {
	Fsync, SynchronousCommit, FullPageWrites []string
}

// Override reads the matrix's flags, comma lists.
func (m *PowerMatrix) Override(ov map[string]string) {
	for flag, dst := range map[string]*[]string{FlagFsync: &m.Fsync, FlagSynchronousCommits: &m.SynchronousCommit, FlagFullPageWrites: &m.FullPageWrites} {
		if v, ok := ov[flag]; ok {
			*dst = nil
			for _, x := range strings.Split(v, ",") {
				*dst = append(*dst, strings.TrimSpace(x))
			}
		}
	}
}

// Check refuses a matrix on SQLite or without the power class (power
// false; class is how the scenario asks for it, as "--faults power"), and
// values PostgreSQL does not take, each at most once.
func (m PowerMatrix) Check(on Spec, power bool, class string) error {
	for _, l := range []struct {
		flag      string
		got, want []string
	}{{FlagFsync, m.Fsync, OnOff}, {FlagSynchronousCommits, m.SynchronousCommit, store.SynchronousCommit}, {FlagFullPageWrites, m.FullPageWrites, OnOff}} {
		if len(l.got) == 0 {
			continue
		}
		if on.IsSQLite() || !power {
			return fmt.Errorf("%w: --%s: only with --backend postgres %s", errclass.ErrUsage, l.flag, class)
		}
		for i, v := range l.got {
			if !slices.Contains(l.want, v) || slices.Index(l.got, v) != i {
				return fmt.Errorf("%w: --%s: %q: want each of %s at most once", errclass.ErrUsage, l.flag, v, strings.Join(l.want, ", "))
			}
		}
	}
	return nil
}

// Settings are the matrix's power settings (PowerSettings.Name) of a run
// that requested r: fsync × synchronous_commit × full_page_writes over the
// matrix's values in their known order, an empty list standing for the
// run's one value (fsync and full_page_writes on, r's synchronous_commit).
func (m PowerMatrix) Settings(r *store.PGRequested) []string {
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
	for _, fs := range or(m.Fsync, "on", OnOff) {
		for _, c := range or(m.SynchronousCommit, sc, store.SynchronousCommit) {
			for _, fpw := range or(m.FullPageWrites, "on", OnOff) {
				out = append(out, PowerSettings{Fsync: fs, SynchronousCommit: c, FullPageWrites: fpw}.Name())
			}
		}
	}
	return out
}
