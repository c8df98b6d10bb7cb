package durability

import (
	"fmt"
	"strings"

	"idemlab/experiments/engine"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/syncmodel"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// The fs power layer (--power-layer fs): a power trial's first process
// opens its file on a powerfs mount over the trial's folder, and the cut
// is the filesystem's, at the same points and after the ACK; the oracle
// is the same exact model. It is the cross-check of both layers: on every
// cell the two must agree with the model.

// FSCut is a power trial's record on the fs layer: the mount point the
// first process opened its file under, and the cut (powerlayer.Record).
type FSCut struct {
	Mount string `json:"mount"`
	powerlayer.Record
}

// fsParams are the models of the fs layer's trial with seed index seed:
// the ones the VFS layer's cut would be made under (FaultOptions).
func (s Settings) fsParams(seed int) powerfs.Params {
	return powerlayer.ParamsOf(s.FaultOptions(seed), s.DirModel)
}

// OnFS says whether condition c's power cuts are made by the filesystem.
func (s Settings) OnFS(c Condition) bool {
	return s.PowerLayer == engine.LayerFS && c.Kind == KindPower && !c.OnServer()
}

// layerSettings checks the power layer: the fs layer cuts under the run's
// fault (drop or torn, faultSettings checks which), at the named points,
// after the ACK and with sync points at the mount's fsyncs (fsSyncCut),
// and needs FUSE on the run's machine as the plan request records
// it (in.machine), never as this machine probes.
func layerSettings(in Input, name func(string) string, st *Settings) error {
	switch in.PowerLayer {
	case "", engine.LayerVFS:
		if in.DirModel != "" {
			return fmt.Errorf("%s: only with %s %s", name("dir_model"), name("power_layer"), engine.LayerFS)
		}
		return nil
	case engine.LayerFS:
	default:
		return fmt.Errorf("%s: %q is not one of %s", name("power_layer"), in.PowerLayer, strings.Join(engine.PowerLayers, ", "))
	}
	switch in.DirModel {
	case "", powerfs.DirPOSIX, powerfs.DirExt4:
		st.DirModel = in.DirModel
	default:
		return fmt.Errorf("%s: %q is not one of %s, %s", name("dir_model"), in.DirModel, powerfs.DirPOSIX, powerfs.DirExt4)
	}
	if why := in.machine.FUSE; why != "" {
		return fmt.Errorf("%s %s: %s", name("power_layer"), engine.LayerFS, why)
	}
	st.PowerLayer = engine.LayerFS
	return nil
}

// fsSyncCut says whether a trial of condition c at point is a cut at a
// sync of the fs layer's mount: at the filesystem's N-th fsync (of a file
// or a directory), not the VFS's N-th xSync, counted over the normal run's
// mount (fsSyncs). The mount freezes there and the harness kills the
// first process (which is told no cut of its own) before the cut.
func (s Settings) fsSyncCut(c Condition, point string) (protocol.SyncCut, bool) {
	if !s.OnFS(c) {
		return protocol.SyncCut{}, false
	}
	return ParseSyncPoint(point)
}

// firstEnv is the first process's environment (FirstEnv), without the
// VFS's cut at a sync where the mount makes it (fsSyncCut).
func (s Settings) firstEnv(c Condition, point string) map[string]string {
	e := FirstEnv(c, point)
	if _, ok := s.fsSyncCut(c, point); ok {
		delete(e, protocol.EnvCutAtSync)
	}
	return e
}

// syncs counts the syncs of trial o that the sweep's sync points number:
// the mount's fsyncs on the fs layer (the cut's outcome counts them), the
// VFS's xSyncs otherwise.
func (o Observation) syncs() int {
	if o.FS != nil {
		return o.FS.Outcome.Syncs
	}
	return faultvfs.Syncs(o.Log)
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

// checkFSSyncCut checks a cut at the mount's sync against its record
// (powerlayer.CheckSyncCut); checkFS checks the rest.
func (f *folder) checkFSSyncCut(t trialLine, cut protocol.SyncCut) {
	if t.o.FS == nil {
		return // checkFS names it
	}
	if field, text := powerlayer.CheckSyncCut(t.o.FS.Record, cut); field != "" {
		f.c.Obs(t.l, "fs."+field, "%s", text)
	}
}

// checkFS checks a trial's fs record: present exactly for a power cut on
// the fs layer, and then as every fold of such a cut does
// (powerlayer.FoldCut).
func (f *folder) checkFS(t trialLine) {
	on := f.st.OnFS(t.cond)
	if (t.o.FS != nil) != on {
		f.c.Obs(t.l, "fs", "present=%v, but an fs record comes with a power cut on the fs layer and only then (power layer %q, kind %s)", t.o.FS != nil, f.st.PowerLayer, t.cond.Kind)
		return
	}
	if on {
		powerlayer.FoldCut(&f.c, f.rec, t.l, "fs", f.st.fsParams(seedOf(t.o)), t.o.FS.Record, t.o.FS.Mount, t.o.FS.ServerProcessID)
	}
}
