package explore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/shard"
)

// TestPointShare: the parts of a sweep split its points between them by
// each point's trial id, each keeping its own violating points; without
// a part, all of them.
func TestPointShare(t *testing.T) {
	const cond = "p/sweep"
	var points []string
	for i := range 12 {
		points = append(points, fmt.Sprintf("pt-%02d", i))
	}
	violating := []string{points[1], points[4], points[9]}
	all, allBad := pointShare(nil, cond, points, violating)
	if diff := cmp.Diff([2][]string{points, violating}, [2][]string{all, allBad}); diff != "" {
		t.Errorf("no part (-want +got):\n%s", diff)
	}
	for _, n := range []int{2, 3} {
		for i := 1; i <= n; i++ {
			t.Run(fmt.Sprintf("%d/%d", i, n), func(t *testing.T) {
				want, wantBad := []string{}, []string{}
				for j, p := range points {
					if shard.Of(shard.TrialID(cond, j), n) == i {
						want = append(want, p)
						if slices.Contains(violating, p) {
							wantBad = append(wantBad, p)
						}
					}
				}
				mine, bad := pointShare(&shard.Part{Index: i, Count: n}, cond, points, violating)
				if diff := cmp.Diff([2][]string{want, wantBad}, [2][]string{mine, bad}); diff != "" {
					t.Errorf("share (-want +got):\n%s", diff)
				}
			})
		}
	}
}
