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

// MountCut is a power cut's record on the fs layer where a process
// opened its file on the mount: the mount point, and the cut (Record).
type MountCut struct {
	Mount string `json:"mount"`
	Record
}

// Fold has checker c check cut m of observation line l against the
// models want: the models (CheckParams), the outcome powerfs.Plan derives
// again from the log (CheckLogHash, Check) and the mount server's process
// line (FoldServer; 0, a folder made before it was recorded). Mismatches
// are named under field (a scenario's name for the record, e.g. "fs").
func (m MountCut) Fold(c *results.Checker, r results.Records, l results.Line, field string, want powerfs.Params) {
	for _, p := range CheckParams(want, m.Params) {
		c.Obs(l, field+"."+p.Field, "%s", p.Text)
	}
	if f, text := CheckLogHash(m.Outcome, r.Since(results.FormatPowerEvidence)); f != "" {
		c.Obs(l, field+"."+f, "%s", text)
	}
	if f, text := Check(m.Record); f != "" {
		c.Obs(l, field+"."+f, "%s", text)
	}
	FoldServer(c, r, l, m.ServerProcessID, m.Mount, m.Params)
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
