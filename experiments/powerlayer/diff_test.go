package powerlayer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/powerfs"
)

// TestDiffOutcome: the first field where a recorded cut differs from the
// replayed plan is named, with each side's value; an empty list and none
// are the same cut.
func TestDiffOutcome(t *testing.T) {
	plan := powerfs.Outcome{Model: "drop", Syncs: 2, Entries: []powerfs.Entry{{Path: "a", Ino: 2}},
		Files: []powerfs.File{{Path: "a", Ino: 2, Decisions: "kd"}}}
	tests := []struct {
		name  string
		edit  func(o *powerfs.Outcome)
		field string
		text  string
	}{
		{"equal", func(*powerfs.Outcome) {}, "", ""},
		{"the files dropped", func(o *powerfs.Outcome) { o.Files = nil }, "outcome.files", "recorded (absent)"},
		{"a decision", func(o *powerfs.Outcome) { o.Files = []powerfs.File{{Path: "a", Ino: 2, Decisions: "kk"}} }, "outcome.files", `outcome.files[0].decisions: plan "kd", recorded "kk"`},
		{"the syncs", func(o *powerfs.Outcome) { o.Syncs = 3 }, "outcome.syncs", "plan 2, recorded 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := plan
			tc.edit(&got)
			field, text := diffOutcome(plan, got)
			if diff := cmp.Diff(tc.field, field); diff != "" {
				t.Errorf("field (-want +got):\n%s", diff)
			}
			if !strings.Contains(text, tc.text) {
				t.Errorf("text %q does not say %q", text, tc.text)
			}
		})
	}
	empty, none := powerfs.Outcome{Entries: []powerfs.Entry{}}, powerfs.Outcome{}
	if field, text := diffOutcome(empty, none); field != "" {
		t.Errorf("an empty list and none differ: %s %s", field, text)
	}
}
