package powerlayer

import (
	"slices"
	"strings"
	"testing"

	"idemlab/worker/faultvfs"
)

// auditLog is a DELETE-mode commit cut after the journal's deletion, with
// one write to the database published after its sync.
func auditLog() []faultvfs.Op {
	return []faultvfs.Op{
		{Kind: faultvfs.OpAdopt, Name: "db", Ino: "1", Img: "0"},
		{Kind: faultvfs.OpCreate, Name: "db-journal", Ino: "2"},
		{Kind: faultvfs.OpSync, Name: "db-journal", Ino: "2", Img: "1", DirSync: true},
		{Kind: faultvfs.OpSync, Name: "db", Ino: "1", Img: "2"},
		{Kind: faultvfs.OpDelete, Name: "db-journal"},
		{Kind: faultvfs.OpWrite, Ino: "1", Spans: []faultvfs.Span{{0, 1536}}},
	}
}

// reportFor is the report a faithful recovery of log gives.
func reportFor(tb testing.TB, log []faultvfs.Op, o faultvfs.Options) faultvfs.Report {
	tb.Helper()
	d, err := faultvfs.Derive(log, o)
	if err != nil {
		tb.Fatal(err)
	}
	rep := faultvfs.Report{Ops: len(log), Files: []faultvfs.FileResult{}, Fault: o.Fault, Seed: o.Seed, Unit: o.Unit, Torn: d.Torn}
	for _, a := range d.Plan {
		rep.Files = append(rep.Files, faultvfs.FileResult{Name: a.Name, Action: a.Kind})
	}
	rep.Files = append(rep.Files, faultvfs.FileResult{Name: "db-shm", Action: faultvfs.ActRemove})
	return rep
}

// TestAuditCut: a faithful report passes; editing one logged op, one
// recovery decision or one seed is caught, naming the field.
func TestAuditCut(t *testing.T) {
	torn := faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: 42, Unit: faultvfs.UnitSector}
	tests := []struct {
		name  string
		opts  faultvfs.Options
		edit  func(log []faultvfs.Op, rep *faultvfs.Report)
		field string // "" for no problem
	}{
		{"faithful, drop", faultvfs.Options{Fault: faultvfs.FaultDrop}, func([]faultvfs.Op, *faultvfs.Report) {}, ""},
		{"faithful, torn", torn, func([]faultvfs.Op, *faultvfs.Report) {}, ""},
		{"a logged deletion made durable", faultvfs.Options{Fault: faultvfs.FaultDrop}, func(log []faultvfs.Op, _ *faultvfs.Report) { log[4].DirSync = true }, "recovery.files"},
		{"a logged sync's directory sync dropped", faultvfs.Options{Fault: faultvfs.FaultDrop}, func(log []faultvfs.Op, _ *faultvfs.Report) { log[2].DirSync = false }, "recovery.files"},
		{"a recovery decision changed", faultvfs.Options{Fault: faultvfs.FaultDrop}, func(_ []faultvfs.Op, rep *faultvfs.Report) { rep.Files[1].Action = faultvfs.ActRestore }, "recovery.files[1]"},
		{"a file left out", faultvfs.Options{Fault: faultvfs.FaultDrop}, func(_ []faultvfs.Op, rep *faultvfs.Report) { rep.Files = rep.Files[1:] }, "recovery.files"},
		{"a torn decision changed", torn, func(_ []faultvfs.Op, rep *faultvfs.Report) {
			d := []byte(rep.Torn[0].Decisions)
			d[0] = map[byte]byte{'k': 'd', 'd': 'g', 'g': 'k'}[d[0]]
			rep.Torn[0].Decisions = string(d)
		}, "recovery.torn[0].decisions"},
		{"the seed changed", torn, func(_ []faultvfs.Op, rep *faultvfs.Report) { rep.Seed++ }, "recovery.seed"},
		{"a logged write's range changed", torn, func(log []faultvfs.Op, _ *faultvfs.Report) { log[5].Spans = []faultvfs.Span{{0, 1000}} }, "recovery.torn[0]"},
		{"the op count changed", faultvfs.Options{Fault: faultvfs.FaultDrop}, func(_ []faultvfs.Op, rep *faultvfs.Report) { rep.Ops-- }, "recovery.ops"},
		{"an unknown op", faultvfs.Options{Fault: faultvfs.FaultDrop}, func(log []faultvfs.Op, _ *faultvfs.Report) { log[3].Kind = "rename" }, "log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := auditLog()
			rep := reportFor(t, log, tt.opts)
			if tt.opts.Fault == faultvfs.FaultTorn && len(rep.Torn) != 1 {
				t.Fatalf("torn decisions %+v, want one file", rep.Torn)
			}
			tt.edit(log, &rep)
			got := AuditCut(log, rep, tt.opts)
			if tt.field == "" {
				if len(got) > 0 {
					t.Errorf("problems in a faithful record: %+v", got)
				}
				return
			}
			if !slices.ContainsFunc(got, func(p Problem) bool { return strings.HasPrefix(p.Field, tt.field) }) {
				t.Errorf("no problem at %s: %+v", tt.field, got)
			}
		})
	}
}
