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
// (wantOnServer), through PostgreSQL's guarantee (backend.Keeps).

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

// pgPowerSettingName is a PostgreSQL power condition's setting, as
// tables name it.
func pgPowerSettingName(c Condition) string {
	return backend.PowerCell{PowerSettings: c.power(), Model: c.Model}.Name()
}

// power is a PostgreSQL power condition's server settings, but the run's
// wal_sync_method (Settings.powerSettings).
func (c Condition) power() backend.PowerSettings {
	return backend.PowerSettings{Fsync: c.Fsync, SynchronousCommit: c.SynchronousCommit, FullPageWrites: c.FullPageWrites}
}

// pgPowerSettingOrder lists every PostgreSQL power setting name in table
// order.
func pgPowerSettingOrder(scs []string) []string {
	var out []string
	for _, p := range backend.PowerCells(backend.OnOff, scs, backend.OnOff, backend.PowerModels) {
		out = append(out, p.Name())
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

// checkPGPower checks a PostgreSQL power trial's record: present exactly
// for a power cut on PostgreSQL; its settings, its quiet settings and what
// the recovered server read back are the condition's; the cut's models
// are the condition's, and the rest as every fold of one checks
// (backend.FoldPower).
func (f *folder) checkPGPower(t trialLine) {
	on := t.cond.pgPower()
	if (t.o.PGPower != nil) != on {
		f.c.Obs(t.l, "pg_power", "present=%v, but a PostgreSQL power record comes with a power cut on PostgreSQL and only then (kind %s)", t.o.PGPower != nil, t.cond.Kind)
		return
	}
	if !on {
		return
	}
	backend.FoldPower(&f.c, f.rec, t.l, *t.o.PGPower, f.st.powerSettings(t.cond), f.st.pgParams(t.cond), f.st.PowerQuiet)
}
