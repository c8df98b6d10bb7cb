package powerfs

import "testing"

// TestFirstDiffNamesTheField: the fold names the first field of a cut's
// outcome that differs from what its log derives, by its JSON path.
func TestFirstDiffNamesTheField(t *testing.T) {
	base := Outcome{Model: "drop", Entries: []Entry{{Path: "a", Ino: 2}},
		Files: []File{{Path: "a", Ino: 2, Decisions: "kd"}}}
	for _, tt := range []struct {
		name string
		edit func(o *Outcome)
		want string
	}{
		{"equal", func(*Outcome) {}, ""},
		{"a decision", func(o *Outcome) { o.Files[0].Decisions = "kk" }, ".files[0].decisions"},
		{"an entry's inode", func(o *Outcome) { o.Entries[0].Ino = 3 }, ".entries[0].ino"},
		{"the model", func(o *Outcome) { o.Model = "keep" }, ".model"},
		{"an extra entry", func(o *Outcome) { o.Entries = append(o.Entries, Entry{Path: "b"}) }, ".entries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := base
			got.Entries = append([]Entry{}, base.Entries...)
			got.Files = append([]File{}, base.Files...)
			tt.edit(&got)
			if f := FirstDiff(base, got); f != tt.want {
				t.Errorf("FirstDiff = %q, want %q", f, tt.want)
			}
		})
	}
}
