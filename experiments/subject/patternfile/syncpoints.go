package patternfile

// Sync-point cuts of a handler program's power class (--sync-points,
// issue 29's "before and after the N-th fsync of any process on the
// mount"). A program's own SQLite, Python's or Node's, syncs through the
// kernel, so the cut is counted by the mount: its N-th fsync (of a file or
// a directory, by any process on it), which is not the VFS's N-th xSync.
//
// Each such power condition runs, besides the pattern's discovery, a sync
// discovery of its own: one delivery on the mount under the condition's
// setting, cut after its ACK under keep, whose op log counts the mount's
// fsyncs (its outcome's syncs, which the fold derives again from the log).
// The condition then cuts under each power model (drop, keep and torn)
// just before and just after each of them, sync-1-before … sync-N-after,
// each trial a mount frozen at its
// fsync (powerlayer.StartCut): the parent kills the first delivery's group
// (harness.Program.KillOn), cuts, and redelivers on the rebuilt folder.
// The oracle is the pattern's invariants after the redeliveries, as for
// the other power cuts under each model: every such cut comes before the
// ACK, so the event is delivered again on what the model left (drop:
// nothing unsynced; keep: everything written, as a process crash; torn:
// seeded keep/drop/garble of each unsynced unit, Settings.Unit). The fold lists
// every N from 1 to the discovered count, before and after, under each
// model, in the plan, so a missing or extra cut is a finding of the run's
// completeness. A drop cut's key is its point, "sync-3-before", as in
// folders made before the other models were swept; keep's and torn's end
// in their model, "sync-3-before/keep".

import (
	"fmt"
	"slices"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/results"
	"idemlab/experiments/syncmodel"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// FlagSyncPoints turns the sync-point cuts on.
const FlagSyncPoints = "sync-points"

// SyncLegend says what a power setting's drop row holds with
// --sync-points.
const SyncLegend = "  sync points (--sync-points): each model's row also holds a cut just before and just after each fsync on the trial's mount, sync-1-before to sync-N-after, N the fsyncs a sync discovery (one delivery on the mount under the setting) counted"

// KindSyncDiscovery is a power condition's sync discovery: its delivery on
// the mount, cut after the ACK under keep, which counts the fsyncs.
const KindSyncDiscovery = "sync-discovery"

// SyncModels are the models of the sync-point cuts, each power model:
// under drop a cut just before an fsync and one just after it differ by
// what that fsync made durable; under keep by nothing the disk holds
// (the process crash's cut, which the redelivery must survive too); under
// torn by which units the seed keeps, drops or garbles.
var SyncModels = engine.PowerModels

// syncTag is the tag that ends the keys of model m's sync-point cuts:
// none for drop, whose keys folders made before keep and torn were swept
// hold, else the model.
func syncTag(m string) string {
	if m == faultvfs.FaultDrop {
		return ""
	}
	return m
}

// syncSwept says whether condition c of pattern pat cuts at the mount's
// fsyncs: a handler program's power condition on the filesystem, with
// --sync-points.
func (s Settings) syncSwept(c Condition, pat Pattern) bool {
	return s.SyncPoints && c.Fault == wp.FaultPower && pat.File.IsProgram()
}

// syncSets are the sweeps of condition c's sync-point cuts, one per
// model, planned from the syncs its sync discovery counted
// (engine.Found.Syncs); each sweep's first cut stands for the sync
// discovery, which is no trial of it. A folder older than
// results.FormatPowerLines swept drop alone (all false).
func syncSets(c Condition, all bool) []engine.Set {
	models := SyncModels
	if !all {
		models = models[:1]
	}
	var out []engine.Set
	for _, m := range models {
		out = append(out, engine.Set{Class: engine.Power, Condition: c.Name,
			Sweep: &engine.Sweep{SyncPoints: true, Model: m, Layer: engine.LayerFS, Tag: syncTag(m)}})
	}
	return out
}

// syncCutOf says whether trial o cuts at a sync of its mount, and where.
func syncCutOf(o Observation) (protocol.SyncCut, bool) {
	if o.Kind != KindPower {
		return protocol.SyncCut{}, false
	}
	return syncmodel.ParseSyncPoint(o.Point)
}

// ref is trial o as the plan lists it: a sync-point cut by its key, the
// point and its model's tag (engine.Sweep.Key), any other by its index.
func (o Observation) ref() engine.Trial {
	t := engine.Trial{Condition: o.Condition, Index: o.Trial}
	if _, ok := syncCutOf(o); ok {
		sw := engine.Sweep{Tag: syncTag(o.Model)}
		t.Key = sw.Key(engine.Cut{Point: o.Point})
	}
	return t
}

// syncDiscovery is what a power condition's sync discovery records: a
// power delivery cut after its ACK under keep.
func syncDiscovery() Observation {
	return Observation{Kind: KindSyncDiscovery, Point: engine.PointACK, Model: faultvfs.FaultKeep}
}

// syncWindow is the span of fsyncs condition c's sync discovery made, from
// the first shard's record: on PostgreSQL its recorded window, which the
// fold checks against its cut (checkSyncDiscovery); on the filesystem
// from 0 to its count.
func (f *folder) syncWindow(c Condition) backend.SyncWindow {
	if w, ok := f.syncs[c.Name]; ok {
		return w
	}
	var w backend.SyncWindow
	for _, l := range f.rec.Observations {
		if l.Condition != c.Name || l.Shard != f.first {
			continue
		}
		var o Observation
		if results.DecodeStrict(l.Raw, &o) != nil || o.Kind != KindSyncDiscovery {
			continue
		}
		if o.PowerFS != nil {
			w = backend.SyncWindow{To: o.PowerFS.Outcome.Syncs}
		} else if o.SyncWindow != nil {
			w = *o.SyncWindow
		}
		break
	}
	if f.syncs == nil {
		f.syncs = map[string]backend.SyncWindow{}
	}
	f.syncs[c.Name] = w
	return w
}

// checkSyncDiscovery checks a sync discovery's line: a condition that
// sweeps, its plan (an ACK under keep), every delivery, and its cut,
// derived again from its op log.
func (f *folder) checkSyncDiscovery(t *trialLine) {
	want := syncDiscovery()
	switch {
	case !f.st.syncSwept(t.c, t.pat):
		f.c.Obs(t.l, "kind", "%q, but condition %s does not cut at the mount's fsyncs (a handler program's power condition with --sync-points)", t.o.Kind, t.c.Name)
		return
	case t.o.Point != want.Point || t.o.Model != want.Model || t.o.Trial != 0:
		f.c.Obs(t.l, "point", "trial %d cut at %q under %q, but a sync discovery is trial 0, cut at %q under %q", t.o.Trial, t.o.Point, t.o.Model, want.Point, want.Model)
	}
	for i, d := range t.o.Deliveries {
		f.delivery(t, i, d)
	}
	if !onServerPower(t.c) {
		f.checkPowerFS(t)
		return
	}
	f.checkPGPower(t)
	if w := t.o.SyncWindow; w == nil {
		f.c.Obs(t.l, "sync_window", "missing: a PostgreSQL power condition's sync discovery records its window")
	} else if o := t.o.PGPower; o != nil {
		if field, text := w.CheckAt(backend.ParsePowerName(t.c.Power), o.Cut); field != "" {
			f.c.Obs(t.l, "sync_window."+field, "%s", text)
		}
	}
}

// checkSyncCut checks a sync-point cut's plan and record: under one of the
// sweeps' models, at an fsync the sync discovery counted, and the mount's
// logged cut at that fsync, before or after it as the point says (the
// cut's models, torn's seed among them, checkPowerFS checks).
func (f *folder) checkSyncCut(t *trialLine, cut protocol.SyncCut) {
	w := f.syncWindow(t.c)
	n := w.To
	switch {
	case !f.st.syncSwept(t.c, t.pat):
		f.c.Obs(t.l, "point", "%q, but condition %s does not cut at the mount's fsyncs (a handler program's power condition with --sync-points)", t.o.Point, t.c.Name)
		return
	case !slices.Contains(SyncModels, t.o.Model):
		f.c.Obs(t.l, "model", "%q, but the sync-point cuts are made under %v", t.o.Model, SyncModels)
	case cut.N > n || cut.N <= w.From:
		f.c.Obs(t.l, "point", "%q, but the sync discovery's window is fsyncs %d to %d of its mount", t.o.Point, w.From+1, n)
	}
	if onServerPower(t.c) {
		f.checkPGPower(t)
		if o := t.o.PGPower; o != nil {
			if field, text := backend.CheckSweepCut(o.Cut, cut); field != "" {
				f.c.Obs(t.l, "pg_power."+field, "%s", text)
			}
		}
		return
	}
	f.checkPowerFS(t)
	if r := t.o.PowerFS; r != nil {
		at := map[bool]string{false: "before", true: "after"}[cut.After]
		if c := r.Outcome.Cut; c == nil || c.Kind != powerfs.OpCut || c.Sync != cut.N || c.At != at {
			f.c.Obs(t.l, "powerfs.outcome.cut", "%s, but a cut at %s falls %s the mount's fsync %d", describeCut(c), t.o.Point, at, cut.N)
		}
	}
}

// describeCut names a logged cut op.
func describeCut(c *powerfs.Op) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s fsync %d", c.At, c.Sync)
}

// syncUnits are the engine's units of pattern pat's conditions that cut
// at the mount's fsyncs, one each: its sync discovery, then its sweep.
// Each has a runner of its own, a copy of u's made before anything runs,
// since the pattern's discovery sets what u's runner knows of it.
func (p *plan) syncUnits(u engine.Unit, pat Pattern) []engine.Unit {
	var out []engine.Unit
	for _, c := range p.s.Conditions {
		if c.Pattern == pat.File.Name && p.s.syncSwept(c, pat) {
			r := *u.Subject.(*runner)
			out = append(out, engine.Unit{Subject: &r, Discovery: c.Name, Sets: syncSets(c, true)})
		}
	}
	return out
}

// cutAtSync has the first delivery of a sync-point cut killed and the
// mount cut as soon as the mount freezes at its fsync, and returns what
// gives that cut once the delivery has ended; the cut is made at once,
// not after the delivery ends, since a process whose fsync the frozen
// server holds cannot end before the cut aborts the mount. A delivery
// that ends before the mount freezes is cut then, with no sync cut in its
// log, which the fold finds.
func (t *trial) cutAtSync(fs *powerlayer.Trial) func() (powerlayer.Record, error) {
	type result struct {
		r   powerlayer.Record
		err error
	}
	kill, ended, res := make(chan struct{}), make(chan struct{}), make(chan *result, 1)
	t.killOn = kill
	go func() {
		select {
		case <-fs.Cuts():
			close(kill)
			r, err := fs.Cut()
			res <- &result{r, err}
		case <-ended:
			res <- nil
		}
	}()
	return func() (powerlayer.Record, error) {
		close(ended)
		if r := <-res; r != nil {
			return r.r, r.err
		}
		return fs.Cut()
	}
}
