package durability

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/engine"
	"idemlab/experiments/powerlayer"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
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
// strict POSIX directories, and the run's fault, drop (the exact model's)
// or torn, whose seed and unit are the ones the VFS layer would tear with
// (FaultOptions); a drop cut carries neither.
func (s Settings) fsParams(seed int) powerfs.Params {
	p := powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX}
	if s.Torn() {
		o := s.FaultOptions(seed)
		p.Model, p.Seed, p.Unit = powerfs.ModelTorn, o.Seed, o.Unit
	}
	return p
}

// OnFS says whether condition c's power cuts are made by the filesystem.
func (s Settings) OnFS(c Condition) bool {
	return s.PowerLayer == engine.LayerFS && c.Kind == KindPower && !c.OnServer()
}

// layerSettings checks the power layer: the fs layer cuts under the run's
// fault (drop or torn, faultSettings checks which), at the named points
// and after the ACK (the filesystem's syncs are not the VFS's, so no sync
// points), and needs FUSE on the run's machine as the plan request records
// it (in.machine), never as this machine probes.
func layerSettings(in Input, name func(string) string, st *Settings) error {
	switch in.PowerLayer {
	case "", engine.LayerVFS:
		return nil
	case engine.LayerFS:
	default:
		return fmt.Errorf("%s: %q is not one of %s", name("power_layer"), in.PowerLayer, strings.Join(engine.PowerLayers, ", "))
	}
	if in.SyncPoints {
		return fmt.Errorf("%s %s: not with sync points (a filesystem's N-th fsync is not the VFS's N-th sync)", name("power_layer"), engine.LayerFS)
	}
	if why := in.machine.FUSE; why != "" {
		return fmt.Errorf("%s %s: %s", name("power_layer"), engine.LayerFS, why)
	}
	st.PowerLayer = engine.LayerFS
	return nil
}

// fsRecovered lists, as faultvfs's report does, "file:action" for the
// pattern's files the cut removed or brought back: names the processes
// left (the keep model's listing) that the cut's outcome lacks, and the
// other way round.
func fsRecovered(db string, r powerfs.Outcome, log []powerfs.Op) ([]string, error) {
	live, err := powerfs.Plan(log, powerfs.Params{Model: powerfs.ModelKeep, DirModel: r.DirModel})
	if err != nil {
		return nil, err
	}
	names := func(o powerfs.Outcome) []string {
		var out []string
		for _, e := range o.Entries {
			if strings.HasPrefix(e.Path, db) {
				out = append(out, e.Path)
			}
		}
		return out
	}
	left, kept := names(live), names(r)
	var out []string
	for _, n := range kept {
		if !slices.Contains(left, n) {
			out = append(out, n+":"+faultvfs.ActResurrect)
		}
	}
	for _, n := range left {
		if !slices.Contains(kept, n) {
			out = append(out, n+":"+faultvfs.ActRemove)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkFS checks a trial's fs record: present exactly for a power cut on
// the fs layer, made under the layer's models, and its outcome the one
// powerfs.Plan derives from its log.
func (f *folder) checkFS(t trialLine) {
	on := f.st.OnFS(t.cond)
	if (t.o.FS != nil) != on {
		f.c.Obs(t.l, "fs", "present=%v, but an fs record comes with a power cut on the fs layer and only then (power layer %q, kind %s)", t.o.FS != nil, f.st.PowerLayer, t.cond.Kind)
		return
	}
	if !on {
		return
	}
	want, got := f.st.fsParams(seedOf(t.o)), t.o.FS.Params
	for _, p := range []struct {
		field     string
		want, got any
	}{{"model", want.Model, got.Model}, {"dir_model", want.DirModel, got.DirModel}, {"seed", want.Seed, got.Seed}, {"unit", want.Unit, got.Unit}} {
		if p.want != p.got {
			f.c.Obs(t.l, "fs.params."+p.field, "%v, but the fs layer cuts this trial under %+v", p.got, want)
		}
	}
	if field, text := powerlayer.Check(t.o.FS.Record); field != "" {
		f.c.Obs(t.l, "fs."+field, "%s", text)
	}
	// The mount's server is a process line of its own; folders made
	// before it was recorded name none.
	if id := t.o.FS.ServerProcessID; id != 0 {
		if p, ok := f.c.Use(f.rec, t.l, id); ok {
			if field, text := powerlayer.CheckServer(p, t.o.FS.Mount, t.o.FS.Params); field != "" {
				f.c.Proc(p, field, "%s", text)
			}
		}
	}
}
