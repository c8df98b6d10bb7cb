package durability

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/worker/powerfs"
)

// PostgreSQL power cuts (--backend postgres --kind power): each trial
// runs on a throwaway cluster of its own whose data folder lives on a
// power-loss mount (backend.PowerTrial, the engine's Power class on its
// fs layer); this file holds only durability's conditions, oracle and
// record check of it. After the first process the parent cuts the power under
// the condition's model (drop or torn), the server restarts on the
// rebuilt folder and runs WAL recovery, amcheck and the checksum count
// run, and the pattern goes on as after a server crash. The conditions
// add fsync × full_page_writes × model to synchronous_commit; wal_sync_method
// is one value for the run (--wal-sync-method), recorded.
//
// What a cell may lose comes from the recorded settings alone
// (pgPowerWant):
//
//	fsync=on, synchronous_commit=on:  every commit the worker made survives
//	                                  (its WAL was flushed before it returned)
//	fsync=on, synchronous_commit=off: drop loses every commit after Setup,
//	                                  ACKed or not: the WAL writer flushed
//	                                  at Setup and is quiet for 10 s
//	                                  (backend.PowerQuiet), and the trial
//	                                  must come inside them (quiet_held);
//	                                  torn keeps a prefix of them, any length
//	fsync=off:                        anything, the tables themselves, or a
//	                                  server that does not start; under
//	                                  drop at least every commit of the
//	                                  first process (nothing is ever
//	                                  synced, so the cut gives back the
//	                                  folder the mount started on)
//	full_page_writes=off under torn:  a page the checksums reject may also
//	                                  come (corrupt)
//
// and nothing else may be corrupt.

// pgOnOff are fsync's and full_page_writes' values, on first.
var pgOnOff = []string{"on", "off"}

// PGPowerModels are the models of a PostgreSQL power cut, the default
// matrix's both.
var PGPowerModels = []string{powerfs.ModelDrop, powerfs.ModelTorn}

// WalSyncMethods are wal_sync_method's values on Linux; empty is the
// server's default, fdatasync.
var WalSyncMethods = []string{"fdatasync", "fsync", "open_datasync", "open_sync"}

// pgSchema is the schema a PostgreSQL power trial's tables live in, on
// its cluster's postgres database.
const pgSchema = "idemlab_durability"

// pgPower says whether c is a PostgreSQL power cut.
func (c Condition) pgPower() bool { return c.OnServer() && c.Kind == KindPower }

// cutOnFS says whether the engine plans c's cuts on its fs layer: SQLite's
// on --power-layer fs, and every PostgreSQL power cut.
func (s Settings) cutOnFS(c Condition) bool { return s.OnFS(c) || c.pgPower() }

// powerSettings are the server settings of a PostgreSQL power condition.
func (s Settings) powerSettings(c Condition) backend.PowerSettings {
	return backend.PowerSettings{Fsync: c.Fsync, SynchronousCommit: c.SynchronousCommit, FullPageWrites: c.FullPageWrites, WalSyncMethod: s.WalSyncMethod}
}

// pgParams are the cut's models of a PostgreSQL power condition: its
// model, strict POSIX directories, and under torn the run's seed and
// 512-byte units.
func (s Settings) pgParams(c Condition) powerfs.Params {
	return backend.CutParams(c.Model, s.Seed)
}

// pgPowerSettingName is a PostgreSQL power condition's setting, as
// tables name it.
func pgPowerSettingName(c Condition) string {
	return backend.PowerSettings{Fsync: c.Fsync, SynchronousCommit: c.SynchronousCommit, FullPageWrites: c.FullPageWrites}.Name() + "," + c.Model
}

// pgPowerSettingOrder lists every PostgreSQL power setting name in table
// order.
func pgPowerSettingOrder(scs []string) []string {
	var out []string
	for _, fs := range pgOnOff {
		for _, sc := range scs {
			for _, fpw := range pgOnOff {
				for _, m := range PGPowerModels {
					out = append(out, pgPowerSettingName(Condition{Fsync: fs, SynchronousCommit: sc, FullPageWrites: fpw, Model: m}))
				}
			}
		}
	}
	return out
}

// pgPowerInput checks the input's PostgreSQL power lists and fills their
// defaults: set without the power kind, they are an error.
func pgPowerInput(in *Input, from map[string]string, st *Settings) error {
	power := slices.Contains(in.Kinds, KindPower)
	lists := []listField{{"fsync", &in.Fsync, pgOnOff, false, nil}, {"full_page_writes", &in.FullPageWrites, pgOnOff, false, nil},
		{"power_models", &in.PowerModels, PGPowerModels, false, nil}}
	for _, l := range lists {
		if !power && len(*l.v) > 0 {
			return fmt.Errorf("%s: only with kind %s", fieldName(from, l.field), KindPower)
		}
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
	if in.WalSyncMethod != "" && !slices.Contains(WalSyncMethods, in.WalSyncMethod) {
		return fmt.Errorf("%s: %q is not one of %s", fieldName(from, "wal_sync_method"), in.WalSyncMethod, strings.Join(WalSyncMethods, ", "))
	}
	if why := in.machine.FUSE; why != "" {
		return fmt.Errorf("%s %s: %s", fieldName(from, "kinds"), KindPower, why)
	}
	st.WalSyncMethod, st.PowerQuiet = in.WalSyncMethod, backend.PowerQuiet
	if slices.Contains(in.PowerModels, powerfs.ModelTorn) {
		st.Seed = defaultSeed
		if in.Seed != nil {
			st.Seed = *in.Seed
		}
	}
	return nil
}

// pgPowerConditions expands a PostgreSQL power condition over fsync ×
// full_page_writes × model, in the known lists' order.
func pgPowerConditions(c Condition, in Input) []Condition {
	var out []Condition
	for _, fs := range pgOnOff {
		for _, fpw := range pgOnOff {
			for _, m := range PGPowerModels {
				if slices.Contains(in.Fsync, fs) && slices.Contains(in.FullPageWrites, fpw) && slices.Contains(in.PowerModels, m) {
					c.Fsync, c.FullPageWrites, c.Model = fs, fpw, m
					c.Name = c.name()
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// pgPowerWant is the oracle of a PostgreSQL power trial, from the
// condition's settings alone (the table above): the exact outcome where
// the cell decides one, else the outcomes it allows.
func pgPowerWant(c Condition, items int, point string) (Want, error) {
	sh, err := ShapeOf(c.Pattern, items, point)
	if err != nil {
		return Want{}, err
	}
	made := sh.Process.Commits
	outcome := func(kept int) string { return outcomeOf(c.Pattern, items, sh, made, made-kept) }
	if c.Fsync == "off" {
		allow := AnyOutcome
		if c.Model == powerfs.ModelDrop && made > 0 {
			allow = AnyWith(TagRolledBack)
			if sh.Acked {
				allow = AnyWith(TagLostAcked)
			}
		}
		return Want{Torn: map[string][]string{"": {allow}}, Recovered: []string{}}, nil
	}
	kept := []int{made}
	if c.SynchronousCommit == "off" {
		kept = []int{0}
		if c.Model == powerfs.ModelTorn {
			kept = nil
			for k := 0; k <= made; k++ {
				kept = append(kept, k)
			}
		}
	}
	var allow []string
	for _, k := range kept {
		if o := outcome(k); !slices.Contains(allow, o) {
			allow = append(allow, o)
		}
	}
	if c.Model == powerfs.ModelTorn && c.FullPageWrites == "off" {
		allow = append(allow, AnyWith(TagCorrupt))
	}
	if len(kept) == 1 && len(allow) == 1 {
		return Want{Outcome: allow[0], RowsLost: rowsLost(c.Pattern, made, kept[0]), Recovered: []string{}}, nil
	}
	return Want{Torn: map[string][]string{"": allow}, Recovered: []string{}}, nil
}

// checkPGPower checks a PostgreSQL power trial's record: present exactly
// for a power cut on PostgreSQL; its settings, its quiet settings and what
// the recovered server read back are the condition's; the cut's models
// are the condition's, and its outcome the one powerfs.Plan derives
// again from its op log; the trial came inside the WAL writer's quiet.
func (f *folder) checkPGPower(t trialLine) {
	on := t.cond.pgPower()
	if (t.o.PGPower != nil) != on {
		f.c.Obs(t.l, "pg_power", "present=%v, but a PostgreSQL power record comes with a power cut on PostgreSQL and only then (kind %s)", t.o.PGPower != nil, t.cond.Kind)
		return
	}
	if !on {
		return
	}
	o := t.o.PGPower
	want := f.st.powerSettings(t.cond)
	for _, m := range o.Check(want, f.st.pgParams(t.cond)) {
		f.c.Obs(t.l, "pg_power."+m.Field, "%s", m.Text)
	}
	backend.FoldPostmaster(&f.c, f.rec, t.l, *o, want)
	if !slices.Equal(o.Quiet, f.st.PowerQuiet) {
		f.c.Obs(t.l, "pg_power.quiet", "%v, but the settings run every power trial's server with %v", o.Quiet, f.st.PowerQuiet)
	}
	if !o.QuietHeld {
		f.c.Obs(t.l, "pg_power.quiet_held", "false: the cut came after wal_writer_delay, so the WAL writer's flush, not the settings, may have decided what survived")
	}
}
