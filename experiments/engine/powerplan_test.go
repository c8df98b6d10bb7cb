package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPowerPlanKeepsOldTrials: a folder of format 4 or older planned the
// drop cuts at the points and after the ACK; they are today's first
// trials, with the same numbers, so shard trial ids stay stable, and every
// model has every cut, ack-open included.
func TestPowerPlanKeepsOldTrials(t *testing.T) {
	points := []string{"before-1-exec", "after-1-exec"}
	old, now := PowerPlan(points, true), PowerPlan(points, false)
	if diff := cmp.Diff([]PowerCut{{Point: "before-1-exec"}, {Point: "after-1-exec"}, {Point: PointACK}}, old); diff != "" {
		t.Errorf("old plan (-want +got):\n%s", diff)
	}
	for i, c := range old {
		if now[i].Point != c.Point || now[i].Model != PowerModels[0] {
			t.Errorf("trial %d: old %+v, now %+v", i, c, now[i])
		}
	}
	perModel := map[string][]string{}
	for _, c := range now {
		perModel[c.Model] = append(perModel[c.Model], c.Point)
	}
	for _, m := range PowerModels {
		if diff := cmp.Diff(append(append([]string{}, points...), PointACK, PointACKOpen), perModel[m]); diff != "" {
			t.Errorf("model %s's cuts (-want +got):\n%s", m, diff)
		}
	}
}
