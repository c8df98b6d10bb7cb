package durability

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/syncmodel"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
)

// Trial is one trial's observed figures, derived by the fold.
type Trial struct {
	Outcome   string `json:"outcome"`
	FirstExit int    `json:"first_exit"`
	// RowsLost counts rows the first process left that the cut took back.
	RowsLost  int    `json:"rows_lost"`
	Integrity string `json:"integrity"`
	// Recovered lists "file:action" for every file the cut changed.
	Recovered []string `json:"recovered,omitempty"`
	// Views, under the torn mode, names what the seed did to each file it
	// decided (syncmodel.Key), read from the recorded decisions.
	Views string `json:"views,omitempty"`
	// Lost, on PostgreSQL, lists the rows the parent read before the
	// crash and not after it, "table: row" each.
	Lost []string `json:"lost_rows,omitempty"`
}

// Expect is the oracle, from the settings alone: per condition, per trial
// (each point, and under the torn mode each seed of a power trial), what
// the sync model says the trial ends as (WantOf).
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, c := range st.Conditions {
		order, err := st.ModelOrder(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		exp := map[string]Want{}
		// A shard expects its part of the trials, and the normal run.
		for _, tr := range st.share(c, order, st.Shard.Runs) {
			w, err := st.wantOf(c, tr.Point)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			k := st.TrialKey(c, tr.Point, tr.Seed)
			if _, ok := st.mountSyncCut(c, tr.Point); ok {
				// The mount's fsyncs are the normal run's to count, not
				// the model's: one want for every N (anySyncKey).
				k, _ = anySyncKey(k)
			}
			exp[k] = w
		}
		out = append(out, scenario.Expected{Condition: c.Name, Value: exp})
	}
	return out, nil
}

// anySync starts the key of the want for a cut at any of the fs layer's
// mount's fsyncs, "sync-N-before" or "sync-N-after" (with "#seed" under
// torn): the normal run counts them, and the fold checks that the trials
// are exactly its sweep.
const anySync = "sync-N-"

// anySyncKey turns a sync point's trial key into its anySync key.
func anySyncKey(k string) (string, bool) {
	point, seed, _ := strings.Cut(k, "#")
	c, ok := ParseSyncPoint(point)
	if !ok {
		return "", false
	}
	out := anySync + map[bool]string{false: "before", true: "after"}[c.After]
	if seed != "" {
		out += "#" + seed
	}
	return out, true
}

// wantOf is the oracle for condition c's trial at point: the sync model's
// on SQLite (WantOf), wantOnServer's on PostgreSQL.
func (s Settings) wantOf(c Condition, point string) (Want, error) {
	if _, ok := s.mountSyncCut(c, point); ok && c.OnServer() {
		return s.pgSyncWant(c)
	}
	if c.OnServer() {
		return wantOnServer(c, s.Items, point)
	}
	if _, ok := s.fsSyncCut(c, point); ok {
		return s.fsSyncWant(c)
	}
	w, err := WantOf(c.Pattern, s.modelOf(c), s.Items, point, s.faultOf(c))
	if err == nil && w.Torn != nil && s.OnFS(c) {
		w.Torn = map[string][]string{"": AllowedSet(w.Torn)}
	}
	return w, err
}

// AllowedSet is the oracle of a torn cut on the fs layer: every outcome
// some combination of the files' views allows. The views are the VFS's
// (its units, its decisions); the filesystem tears its own units (the
// writes as FUSE passes them, under its own seeded decisions), so which
// view a file ends in is not the VFS's cell for cell. What holds on both
// layers is that each file the cut decides is kept, dropped or torn, so
// the outcome is one the union allows; the files removed or brought back
// are the exact model's, as under drop.
func AllowedSet(torn map[string][]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(torn)) {
		for _, o := range torn[k] {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// modelOf is the setting the model predicts condition c's trials under:
// c's own, but for a power cut under the keep mode a process crash's
// (kind kill): a cut that keeps everything written leaves what a crash
// of the process at the same point leaves.
func (s Settings) modelOf(c Condition) Setting {
	m := c.Setting()
	if c.Kind == KindPower && s.Keep() {
		m.Kind = KindKill
	}
	return m
}

// faultOf is the fault mode of a condition's cuts: the settings' for a
// power cut; a kill keeps everything.
func (s Settings) faultOf(c Condition) string {
	if c.Kind == KindPower {
		return s.Fault
	}
	return faultvfs.FaultDrop
}

// Check passes a condition when the same trials ran as the model has, and
// each ended as it says: under the drop mode the exact outcome, rows lost
// and files removed or brought back; under the torn mode an outcome the
// seed's views allow, and the same files.
func (Scenario) Check(_ string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	var exp map[string]Want
	var obs map[string]Trial
	if err := json.Unmarshal(expected, &exp); err != nil {
		return false, nil, fmt.Errorf("expected: %w", err)
	}
	if err := json.Unmarshal(observed, &obs); err != nil {
		return false, nil, fmt.Errorf("observed: %w", err)
	}
	var diffs []results.Difference
	for _, k := range slices.Sorted(maps.Keys(exp)) {
		if strings.HasPrefix(k, anySync) {
			continue // the fold checks the sweep over the mount's fsyncs
		}
		o, ok := obs[k]
		if !ok {
			diffs = append(diffs, results.Difference{Path: "[" + k + "]", Expected: exp[k].String(), Observed: "(not tried)"})
			continue
		}
		diffs = append(diffs, Mismatch(k, exp[k], o)...)
	}
	for _, k := range slices.Sorted(maps.Keys(obs)) {
		if any, ok := anySyncKey(k); ok {
			if w, ok := exp[any]; ok {
				if _, exact := exp[k]; !exact {
					diffs = append(diffs, Mismatch(k, w, obs[k])...)
					continue
				}
			}
		}
		if _, ok := exp[k]; !ok {
			diffs = append(diffs, results.Difference{Path: "[" + k + "]", Expected: "(no such trial in the model)", Observed: obs[k].Outcome})
		}
	}
	return len(diffs) == 0, diffs, nil
}

// Mismatch lists where trial o, keyed k, differs from what the model
// wants of it; none means it matches.
func Mismatch(k string, w Want, o Trial) []results.Difference {
	var diffs []results.Difference
	add := func(field, want, got string) {
		diffs = append(diffs, results.Difference{Path: "[" + k + "]." + field, Expected: want, Observed: got})
	}
	if w.Torn != nil {
		allowed, ok := w.Torn[o.Views]
		switch {
		case !ok:
			add("views", "one of "+strings.Join(slices.Sorted(maps.Keys(w.Torn)), " | "), o.Views)
		case !Allows(allowed, o.Outcome):
			add("outcome", fmt.Sprintf("one of %v", allowed), o.Outcome)
		}
	} else {
		if o.Outcome != w.Outcome {
			add("outcome", w.Outcome, o.Outcome)
		}
		if o.RowsLost != w.RowsLost {
			add("rows_lost", fmt.Sprint(w.RowsLost), fmt.Sprint(o.RowsLost))
		}
	}
	if got := NamesChanged(o.Recovered); !slices.Equal(w.Recovered, []string{AnyFiles}) && !slices.Equal(got, w.Recovered) {
		add("recovered", fmt.Sprint(w.Recovered), fmt.Sprint(got))
	}
	return diffs
}

// Allowed is what the model allows trial o, for the report: the one exact
// outcome, or the set the seed's views allow.
func (w Want) Allowed(o Trial) []string {
	if w.Torn != nil {
		return w.Torn[o.Views]
	}
	return []string{w.Outcome}
}

// String renders a Want for a difference.
func (w Want) String() string {
	if w.Torn != nil {
		return fmt.Sprintf("torn %v, files %v", w.Torn, w.Recovered)
	}
	return fmt.Sprintf("%s, %d rows lost, files %v", w.Outcome, w.RowsLost, w.Recovered)
}

// NamesChanged keeps, of a trial's recovered files, the ones a cut
// removed or brought back, which the model predicts; a restored file and
// the WAL index, which every cut removes, are left out.
func NamesChanged(recovered []string) []string {
	out := []string{}
	for _, r := range recovered {
		name, action, _ := strings.Cut(r, ":")
		if strings.HasSuffix(name, "-shm") || action == faultvfs.ActRestore {
			continue
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// pgSyncWant is the oracle of a cut at a PostgreSQL power condition's
// mount's fsync, any N (backend.SweepWantOf under the condition's
// settings and model): anything with fsync off; else what a kill at any
// named point leaves under the same guarantee (wantOnServer), every cut
// coming before the ACK, with a damaged cluster added where the guarantee
// allows one.
func (s Settings) pgSyncWant(c Condition) (Want, error) {
	w := backend.SweepWantOf(s.powerSettings(c), c.Model)
	if w.Anything {
		return Want{Torn: map[string][]string{"": {AnyOutcome}}, Recovered: []string{}}, nil
	}
	var allow []string
	for _, p := range Points(c.Pattern, s.Items) {
		pw, err := wantOnServer(c, s.Items, p)
		if err != nil {
			return Want{}, err
		}
		set := []string{pw.Outcome}
		if pw.Torn != nil {
			set = AllowedSet(pw.Torn)
		}
		for _, o := range set {
			if !slices.Contains(allow, o) {
				allow = append(allow, o)
			}
		}
	}
	if w.MayCorrupt && !slices.Contains(allow, AnyWith(TagCorrupt)) {
		allow = append(allow, AnyWith(TagCorrupt))
	}
	return Want{Torn: map[string][]string{"": allow}, Recovered: []string{}}, nil
}

// fsSyncWant is the oracle of a cut at the mount's N-th fsync: the
// filesystem numbers its own fsyncs (a directory's too, inside one of the
// VFS's xSync), so which of the VFS's syncs it falls in is not known to
// the model; the cut falls just before or just after some fsync, so the
// outcome is one some cut inside some VFS sync allows (AllowedSet over the
// model's sync points, each under the run's fault), and the files removed
// or brought back are not predicted (AnyFiles).
func (s Settings) fsSyncWant(c Condition) (Want, error) {
	n, err := syncmodel.Syncs(ModelSetting(c.Setting()), syncmodel.Process{Commits: TotalCommits(c.Pattern, s.Items), End: syncmodel.EndClose})
	if err != nil {
		return Want{}, err
	}
	all := map[string][]string{}
	for k := 1; k <= n; k++ {
		for _, after := range []bool{false, true} {
			point := protocol.SyncCut{N: k, After: after}.Point()
			w, err := WantOf(c.Pattern, s.modelOf(c), s.Items, point, s.faultOf(c))
			if err != nil {
				return Want{}, err
			}
			if w.Torn == nil {
				w.Torn = map[string][]string{"": {w.Outcome}}
			}
			all[point] = AllowedSet(w.Torn)
		}
	}
	return Want{Torn: map[string][]string{"": AllowedSet(all)}, Recovered: []string{AnyFiles}}, nil
}
