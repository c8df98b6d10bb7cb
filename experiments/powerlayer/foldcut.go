package powerlayer

import (
	"fmt"

	"idemlab/experiments/results"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// ParamsOf are the models the fs layer cuts under for a trial whose VFS
// cut would be o: strict POSIX directories unless dirModel names one, and
// o's fault, whose torn seed and unit are the ones the VFS layer would
// tear with; a drop or keep cut carries neither.
func ParamsOf(o faultvfs.Options, dirModel string) powerfs.Params {
	p := powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX}
	if dirModel != "" {
		p.DirModel = dirModel
	}
	switch o.Fault {
	case faultvfs.FaultKeep:
		p.Model = powerfs.ModelKeep
	case faultvfs.FaultTorn:
		p.Model, p.Seed, p.Unit = powerfs.ModelTorn, o.Seed, o.Unit
	}
	return p
}

// FoldCut has checker c check cut record rec of observation line l, whose
// mount is mount and whose mount server is process line serverID (0: a
// folder made before it was recorded), against the models want: the
// models (CheckParams), the outcome powerfs.Plan derives again from the
// log (CheckLogHash, Check) and the server's process line (FoldServer). Mismatches are
// named under field (a scenario's name for the record, e.g. "fs").
func FoldCut(c *results.Checker, r results.Records, l results.Line, field string, want powerfs.Params, rec Record, mount string, serverID int) {
	for _, m := range CheckParams(want, rec.Params) {
		c.Obs(l, field+"."+m.Field, "%s", m.Text)
	}
	if f, text := CheckLogHash(rec.Outcome, r.Since(results.FormatPowerEvidence)); f != "" {
		c.Obs(l, field+"."+f, "%s", text)
	}
	if f, text := Check(rec); f != "" {
		c.Obs(l, field+"."+f, "%s", text)
	}
	FoldServer(c, r, l, serverID, mount, rec.Params)
}

// CheckSyncCut checks that the cut op rec's outcome logged fell at the
// mount's fsync the sync point cut names, before or after it as cut says;
// else it names the field ("outcome.cut") and what is wrong.
func CheckSyncCut(rec Record, cut protocol.SyncCut) (field, text string) {
	at := map[bool]string{false: "before", true: "after"}[cut.After]
	if c := rec.Outcome.Cut; c == nil || c.Kind != powerfs.OpCut || c.Sync != cut.N || c.At != at {
		return "outcome.cut", fmt.Sprintf("%+v, but a cut at %s falls %s the mount's fsync %d", c, cut.Point(), at, cut.N)
	}
	return "", ""
}
