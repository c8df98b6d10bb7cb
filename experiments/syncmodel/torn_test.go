package syncmodel

import (
	"fmt"
	"testing"
)

// TestAllTornIsWidest: with every file it decides torn, a torn cut's
// range of commits holds the range of every combination of views
// (TornCuts), at every sync of every setting; the first combination is
// the drop mode's cut.
func TestAllTornIsWidest(t *testing.T) {
	for _, jm := range []string{"DELETE", "WAL"} {
		for _, sy := range []string{"OFF", "NORMAL", "FULL", "EXTRA"} {
			s, p := Setting{JournalMode: jm, Synchronous: sy}, Process{Commits: 2, End: EndClose}
			n, err := Syncs(s, p)
			if err != nil {
				t.Fatal(err)
			}
			for k := 1; k <= n; k++ {
				for _, after := range []bool{false, true} {
					c := Cut{Sync: k, After: after}
					name := fmt.Sprintf("%s/%s/%+v", jm, sy, c)
					all, err := AllTorn(s, p, c)
					if err != nil {
						t.Fatal(err)
					}
					cuts, err := TornCuts(s, p, c)
					if err != nil {
						t.Fatal(err)
					}
					drop, err := PowerCut(s, p, c, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(cuts) == 0 || cuts[0].Result.Min != drop.Min || cuts[0].Result.Max != drop.Max {
						t.Errorf("%s: the first combination is not the drop cut (%d..%d): %+v", name, drop.Min, drop.Max, cuts)
					}
					for _, tc := range cuts {
						if tc.Result.Min < all.Min || tc.Result.Max > all.Max {
							t.Errorf("%s: views %v leave %d..%d, outside every file torn's %d..%d", name, tc.Views, tc.Result.Min, tc.Result.Max, all.Min, all.Max)
						}
					}
				}
			}
		}
	}
}
