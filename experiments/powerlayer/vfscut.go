package powerlayer

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/worker/faultvfs"
)

// The VFS layer's counterpart of Check: a power cut made by worker/faultvfs
// (engine.LayerVFS) replayed from the op log its trial kept.

// Problem is one disagreement the audit found: the record's field and what
// is wrong with it.
type Problem struct {
	Field string
	Text  string
}

// AuditCut replays a power cut from its record: the op log the trial kept,
// and the recovery report. It derives the plan and the torn decisions from
// the log and want (the fault options the settings give the trial) alone,
// and lists every place where the report says otherwise: a file restored,
// removed or brought back that the log does not call for, or the other way
// round; a torn decision or seed that is not the one the settings and the
// log give. verify runs the same, so it re-derives the cut, not only its
// outcome.
func AuditCut(log []faultvfs.Op, rep faultvfs.Report, want faultvfs.Options) []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Field: field, Text: fmt.Sprintf(format, args...)})
	}
	if rep.Fault != want.Fault {
		add("recovery.fault", "%q, but the settings ask for %q", rep.Fault, want.Fault)
	}
	if rep.Seed != want.Seed || rep.Unit != want.Unit {
		add("recovery.seed", "seed %d with units of %d bytes, but the settings give this trial seed %d with units of %d", rep.Seed, rep.Unit, want.Seed, want.Unit)
	}
	if rep.Ops != len(log) {
		add("recovery.ops", "%d, but the trial's log holds %d ops", rep.Ops, len(log))
	}
	d, err := faultvfs.Derive(log, want)
	if err != nil {
		add("log", "the op log does not replay: %v", err)
		return out
	}
	var files []faultvfs.FileResult
	for _, f := range rep.Files {
		if !strings.HasSuffix(f.Name, "-shm") {
			files = append(files, f)
		}
	}
	for i := 0; i < max(len(files), len(d.Plan)); i++ {
		switch {
		case i >= len(files):
			add("recovery.files", "lacks %s (%s), which the log calls for", d.Plan[i].Name, d.Plan[i].Kind)
		case i >= len(d.Plan):
			add(results.Field("recovery", "files", i), "%s %s, which the log does not call for", files[i].Name, files[i].Action)
		case files[i].Name != d.Plan[i].Name || files[i].Action != d.Plan[i].Kind:
			add(results.Field("recovery", "files", i), "%s %s, but replaying the log gives %s %s", files[i].Name, files[i].Action, d.Plan[i].Name, d.Plan[i].Kind)
		}
	}
	for i := 0; i < max(len(rep.Torn), len(d.Torn)); i++ {
		field := results.Field("recovery", "torn", i)
		switch {
		case i >= len(rep.Torn):
			add("recovery.torn", "lacks the decisions for %s, which the log and seed give", d.Torn[i].Name)
		case i >= len(d.Torn):
			add(field, "decisions for %s, a file the log gives no unsynced writes", rep.Torn[i].Name)
		case rep.Torn[i].Name != d.Torn[i].Name || rep.Torn[i].Ino != d.Torn[i].Ino || !slices.Equal(rep.Torn[i].Spans, d.Torn[i].Spans):
			add(field, "%s spans %v, but the log gives %s spans %v", rep.Torn[i].Name, rep.Torn[i].Spans, d.Torn[i].Name, d.Torn[i].Spans)
		case rep.Torn[i].Decisions != d.Torn[i].Decisions:
			add(field+".decisions", "%s: %q, but seed %d decides %q", rep.Torn[i].Name, rep.Torn[i].Decisions, want.Seed, d.Torn[i].Decisions)
		}
	}
	return out
}
