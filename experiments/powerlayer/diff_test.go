package powerlayer

import (
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
