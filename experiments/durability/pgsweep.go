package durability

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// The fsync sweep of a PostgreSQL power condition (--sync-points with
// --kind power on --backend postgres, issue 29's "before and after the
// N-th fsync of any process on the mount"). The normal run, itself a
// power trial cut after its ACK, records its window (sync_window): the
// mount's fsyncs once Setup had returned (from) and once its first
// process had ended (to); the sweep then cuts just before and just after
// each N of the window (backend.SyncWindow.Cuts), --sync-bound cutting a
// long one short, each a trial on a cluster of its own whose mount
// freezes at its N-th fsync: the harness SIGKILLs the first process and
// cuts under the condition's model. A trial's N is its point
// (sync-N-before, sync-N-after) and the mount's logged cut op, which
// powerfs.Plan derives again from the op log; verify plans the sweep
// again from the recorded window and checks that window against the
// normal run's cut (backend.SyncWindow.CheckAt).
//
// The oracle, from the settings alone (pgSyncWant), is PostgreSQL's
// guarantee for a cut inside the delivery (backend.SweepWantOf): every
// cut falls before the first process's ACK, so the event is delivered
// again on what the cut left, and what it left is what some kill between
// the first process's commits leaves under the same guarantee: the
// outcomes of every named point (wantOnServer), or anything with fsync
// off, and a damaged cluster where the guarantee allows one.

// maxSyncBound is --sync-bound's largest value.
const maxSyncBound = 1000

// pgSweepInput checks the sweep's fields on PostgreSQL and records them:
// sync_points only with the power kind, sync_bound only with sync_points,
// from 1 to maxSyncBound.
func pgSweepInput(in Input, from map[string]string, st *Settings) error {
	power := slices.Contains(in.Kinds, KindPower)
	for _, f := range []struct {
		field string
		set   bool
	}{{"sync_points", in.SyncPoints}, {"sync_bound", in.SyncBound != 0}} {
		if !power && f.set {
			return fmt.Errorf("%s: only with kind %s on --backend postgres (the sweep cuts at the power-loss mount's fsyncs)", fieldName(from, f.field), KindPower)
		}
	}
	if in.SyncBound != 0 && !in.SyncPoints {
		return fmt.Errorf("%s: only with %s", fieldName(from, "sync_bound"), fieldName(from, "sync_points"))
	}
	if in.SyncBound < 0 || in.SyncBound > maxSyncBound {
		return fmt.Errorf("%s: %d is not from 1 to %d", fieldName(from, "sync_bound"), in.SyncBound, maxSyncBound)
	}
	st.SyncPoints, st.SyncBound = in.SyncPoints, in.SyncBound
	return nil
}

// swept is window w as the sweep cuts it: at most SyncBound fsyncs past
// its start, when that is set.
func (s Settings) swept(w backend.SyncWindow) backend.SyncWindow {
	if s.SyncBound > 0 && w.To-w.From > s.SyncBound {
		w.To = w.From + s.SyncBound
	}
	return w
}

// pgSweeps says whether condition c is a PostgreSQL power condition that
// sweeps its mount's fsyncs.
func (s Settings) pgSweeps(c Condition) bool { return s.SyncPoints && c.pgPower() }

// mountSyncCut says whether a trial of condition c at point is a cut at
// a power-loss mount's fsync, the parent's to make (the first process is
// told no cut of its own): on the fs layer (fsSyncCut) or on a
// PostgreSQL power condition's cluster.
func (s Settings) mountSyncCut(c Condition, point string) (protocol.SyncCut, bool) {
	if s.pgSweeps(c) {
		return ParseSyncPoint(point)
	}
	return s.fsSyncCut(c, point)
}

// syncWindow is the window of syncs trial o's first process made: the
// recorded one on PostgreSQL, else from 0 to its syncs.
func (o Observation) syncWindow() backend.SyncWindow {
	if o.SyncWindow != nil {
		return *o.SyncWindow
	}
	return backend.SyncWindow{To: o.syncs()}
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

// checkPGSync checks a PostgreSQL power trial's sweep fields: the window
// present on the normal run of a condition that sweeps and on no other
// trial, and agreeing with the normal run's cut; a sync cut's logged cut
// op at its point's fsync.
func (f *folder) checkPGSync(t trialLine) {
	o := t.o.PGPower
	normal := t.o.Point == PointACK && f.st.pgSweeps(t.cond)
	if (t.o.SyncWindow != nil) != normal {
		f.c.Obs(t.l, "sync_window", "present=%v, but the normal run of a PostgreSQL power condition with sync_points records its window, and no other trial", t.o.SyncWindow != nil)
		return
	}
	if o == nil {
		return // checkPGPower names it
	}
	if normal {
		if field, text := t.o.SyncWindow.CheckAt(f.st.powerSettings(t.cond), o.Cut); field != "" {
			f.c.Obs(t.l, "sync_window."+field, "%s", text)
		}
		return
	}
	if cut, ok := f.st.mountSyncCut(t.cond, t.o.Point); ok && f.st.pgSweeps(t.cond) {
		if field, text := backend.CheckSweepCut(o.Cut, cut); field != "" {
			f.c.Obs(t.l, "pg_power."+field, "%s", text)
		}
	}
}

// pgFrozen says whether a trial of condition c at point is a PostgreSQL
// power trial whose server the mount froze at an fsync: the parent reads
// nothing before its cut (Before is empty).
func (s Settings) pgFrozen(c Condition, point string) bool {
	_, ok := s.mountSyncCut(c, point)
	return ok && s.pgSweeps(c)
}

// cutAt is the sync cut a PostgreSQL power trial's cluster is started
// with: the mount freezes at the point's fsync, before or after it; none
// (0) for any other trial.
func (s Settings) cutAt(c Condition, point string) (n int, after bool) {
	if cut, ok := s.mountSyncCut(c, point); ok && c.pgPower() {
		return cut.N, cut.After
	}
	return 0, false
}

// frozen delivers the sync cut the trial's mount froze at: the fs
// layer's, or the PostgreSQL power cluster's.
func (t *trial) frozen() <-chan powerfs.CutEvent {
	if t.pc != nil {
		return t.pc.Cluster.Frozen()
	}
	return t.fs.Cuts()
}

// sweepSentence says, for a run that sweeps PostgreSQL power conditions'
// fsyncs, how many cuts the sweep made and which conditions' normal runs
// made no fsync in their delivery (fsync off, or synchronous_commit off,
// whose commits flush nothing), so that their sweep cut nowhere: an empty
// sweep is a result to state, not a pass to count.
func sweepSentence(st Settings, cells []cell) (scenario.Sentence, bool) {
	cuts, swept := 0, 0
	var empty []string
	for _, c := range st.Conditions {
		if !st.pgSweeps(c) {
			continue
		}
		swept++
		n := 0
		for _, cl := range cells {
			if _, ok := ParseSyncPoint(cl.point); ok && cl.cond.Name == c.Name {
				n++
			}
		}
		if cuts += n; n == 0 {
			empty = append(empty, c.Name)
		}
	}
	if swept == 0 {
		return scenario.Sentence{}, false
	}
	text := fmt.Sprintf("The fsync sweep made %d cuts at the power-loss mount's fsyncs over %d conditions", cuts, swept)
	if len(empty) > 0 {
		text += fmt.Sprintf("; in %d of them the normal run's delivery made no fsync on the mount (fsync off, or commits that flush nothing), so their sweep is empty: %s", len(empty), strings.Join(empty, ", "))
	}
	return scenario.Sentence{Text: text + "."}, true
}

// sweepPhrase says what a PostgreSQL power run's settings sweep, for the
// report's settings table.
func sweepPhrase(st Settings) string {
	if !st.SyncPoints {
		return "off (--sync-points)"
	}
	out := "each power condition also cuts just before and just after each fsync of the power-loss mount that its normal run's delivery made (its recorded window)"
	if st.SyncBound > 0 {
		out += fmt.Sprintf(", the first %d of each window (--sync-bound)", st.SyncBound)
	}
	return out
}
