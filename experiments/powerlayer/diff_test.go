package powerlayer

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/powerfs"
)

// TestFirstDiff: the first field where a recorded cut differs from the
// replayed plan is named by its JSON path, with each side's value; a list
// one side has more of is named whole, and an empty list and none are the
// same cut.
func TestFirstDiff(t *testing.T) {
	plan := powerfs.Outcome{Model: "drop", Syncs: 2, Entries: []powerfs.Entry{{Path: "a", Ino: 2}},
		Files: []powerfs.File{{Path: "a", Ino: 2, Decisions: "kd"}}}
	tests := []struct {
		name  string
		edit  func(o *powerfs.Outcome)
		field string
		text  string
	}{
		{"equal", func(*powerfs.Outcome) {}, "", ""},
		{"the files dropped", func(o *powerfs.Outcome) { o.Files = nil }, ".files", "recorded (absent)"},
		{"a decision", func(o *powerfs.Outcome) { o.Files = []powerfs.File{{Path: "a", Ino: 2, Decisions: "kk"}} }, ".files[0].decisions", `derived "kd", recorded "kk"`},
		{"an entry's inode", func(o *powerfs.Outcome) { o.Entries = []powerfs.Entry{{Path: "a", Ino: 3}} }, ".entries[0].ino", "derived 2, recorded 3"},
		{"an extra entry", func(o *powerfs.Outcome) {
			o.Entries = append([]powerfs.Entry{{Path: "a", Ino: 2}}, powerfs.Entry{Path: "b"})
		}, ".entries", ""},
		{"the model", func(o *powerfs.Outcome) { o.Model = "keep" }, ".model", `derived "drop", recorded "keep"`},
		{"the syncs", func(o *powerfs.Outcome) { o.Syncs = 3 }, ".syncs", "derived 2, recorded 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := plan
			tc.edit(&got)
			field, text := FirstDiff(plan, got)
			if diff := cmp.Diff(tc.field, field); diff != "" {
				t.Errorf("field (-want +got):\n%s", diff)
			}
			if !strings.Contains(text, tc.text) {
				t.Errorf("text %q does not say %q", text, tc.text)
			}
		})
	}
	empty, none := powerfs.Outcome{Entries: []powerfs.Entry{}}, powerfs.Outcome{}
	if field, text := FirstDiff(empty, none); field != "" {
		t.Errorf("an empty list and none differ: %s %s", field, text)
	}
}

// TestCheckNamesAnyEditedOp: a recorded log edited in an op that changes
// no survivor (the pid of a write, the name of a file created and never
// synced, the length of a write another covers) still derives another cut,
// since the outcome names the hash of the log it was planned from; an
// outcome recorded without the hash (an older folder) is not held to it,
// and CheckLogHash asks a newer one for it.
func TestCheckNamesAnyEditedOp(t *testing.T) {
	log := []powerfs.Op{
		{Seq: 1, Kind: powerfs.OpBase, Ino: 1, Type: powerfs.TypeDir, Mode: 0o755},
		{Seq: 2, Kind: powerfs.OpBase, Dir: 1, Name: "db", Ino: 2, Type: powerfs.TypeFile, Mode: 0o644, Size: 8192},
		{Seq: 3, Kind: powerfs.OpCreate, Dir: 1, Name: "lock", Ino: 3, Type: powerfs.TypeFile, Mode: 0o644, Pid: 10},
		{Seq: 4, Kind: powerfs.OpWrite, Ino: 2, Len: 4096, Pid: 10},
		{Seq: 5, Kind: powerfs.OpWrite, Ino: 2, Len: 4096, Pid: 10},
		{Seq: 6, Kind: powerfs.OpCut, At: "command"},
	}
	p := powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX}
	planned, err := powerfs.Plan(log, p)
	if err != nil {
		t.Fatal(err)
	}
	if planned.LogSHA256 == "" {
		t.Fatal("the plan names no hash of its log")
	}
	tests := []struct {
		name  string
		edit  func(ops []powerfs.Op, o *powerfs.Outcome)
		field string
	}{
		{"as recorded", func([]powerfs.Op, *powerfs.Outcome) {}, ""},
		{"a write's pid", func(ops []powerfs.Op, _ *powerfs.Outcome) { ops[3].Pid = 11 }, "outcome.log_sha256"},
		{"an unsynced file's name", func(ops []powerfs.Op, _ *powerfs.Outcome) { ops[2].Name = "lock2" }, "outcome.log_sha256"},
		{"a covered write's length", func(ops []powerfs.Op, _ *powerfs.Outcome) { ops[4].Len = 2048 }, "outcome.log_sha256"},
		{"a write's offset that changes the cut", func(ops []powerfs.Op, _ *powerfs.Outcome) { ops[3].Off = 4096 }, "outcome.files[0].decisions"},
		{"an op, from an older folder without the hash", func(ops []powerfs.Op, o *powerfs.Outcome) { ops[3].Pid = 11; o.LogSHA256 = "" }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops, o := slices.Clone(log), planned
			tc.edit(ops, &o)
			field, text := Check(Record{Params: p, Log: ops, Outcome: o})
			if diff := cmp.Diff(tc.field, field); diff != "" {
				t.Errorf("field (-want +got):\n%s\n%s", diff, text)
			}
		})
	}
	for _, tc := range []struct {
		hash      string
		recorded  bool
		wantField string
	}{{planned.LogSHA256, true, ""}, {"", true, "outcome.log_sha256"}, {"", false, ""}} {
		if field, _ := CheckLogHash(powerfs.Outcome{LogSHA256: tc.hash}, tc.recorded); field != tc.wantField {
			t.Errorf("CheckLogHash(%q, %v): %q, want %q", tc.hash, tc.recorded, field, tc.wantField)
		}
	}
}
