package review

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// TestMovedParallel: a parallel an older folder records inside the
// settings (at the top, or an article file's) and the derivation no
// longer gives is a notice; a parallel the derivation gives, another
// field, or an edit that is no parallel stays a finding.
func TestMovedParallel(t *testing.T) {
	const base = "scenarios[explore].settings"
	tests := []struct {
		name string
		d    results.FieldDiff
		want bool
	}{
		{"top, recorded only", results.FieldDiff{Path: base + ".parallel", A: "(absent)", B: "2"}, true},
		{"an article file's", results.FieldDiff{Path: base + ".articles[0].parallel", A: "(absent)", B: "2"}, true},
		{"derived too", results.FieldDiff{Path: base + ".parallel", A: "2", B: "3"}, false},
		{"another field", results.FieldDiff{Path: base + ".rounds", A: "(absent)", B: "2"}, false},
		{"deeper", results.FieldDiff{Path: base + ".patterns[0].parallel", A: "(absent)", B: "2"}, false},
		{"not an index", results.FieldDiff{Path: base + ".articles[x].parallel", A: "(absent)", B: "2"}, false},
		{"another scenario's settings", results.FieldDiff{Path: "scenarios[pattern].settings.parallel", A: "(absent)", B: "2"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, movedParallel(base, tc.d)); diff != "" {
				t.Errorf("movedParallel(%+v) (-want +got):\n%s", tc.d, diff)
			}
		})
	}
}

// TestDerivedDiffsKeepOtherFields: the recorded settings' differences
// from the derived ones keep their sides (recorded first) and leave out a
// parallel only the recorded settings hold.
func TestDerivedDiffsKeepOtherFields(t *testing.T) {
	got := derivedDiffs([]byte(`{"parallel": 2, "seed": 1}`), []byte(`{"seed": 3}`))
	want := []results.FieldDiff{{Path: ".seed", A: "1", B: "3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("derivedDiffs (-want +got):\n%s", diff)
	}
}
