package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/shard"
)

// TestPlanSweep: a swept set plans every point the discovery passed, the
// extra points and, with sync points, a cut before and after each sync,
// each with its seeds, leaving out the discovery's own trial; its ids are
// "condition@point", with "#seed" when seeded and "/tag" when tagged,
// whatever its class.
func TestPlanSweep(t *testing.T) {
	const cond = "p/WAL/FULL/power"
	found := Found{Points: []string{"a", "b"}, Syncs: 1}
	tests := []struct {
		name  string
		class Kind
		sweep Sweep
		want  []string
		// found, when set, is the discovery's in place of the shared one.
		found *Found
	}{
		{"points only", Points, Sweep{First: "ack"}, []string{cond + "@a", cond + "@b"}, nil},
		{"extra", ServerCrash, Sweep{First: "ack", Extra: []string{"ack-open"}}, []string{cond + "@a", cond + "@b", cond + "@ack-open"}, nil},
		{"sync points", Power, Sweep{First: "ack", SyncPoints: true},
			[]string{cond + "@a", cond + "@b", cond + "@sync-1-before", cond + "@sync-1-after"}, nil},
		{"seeded", Power, Sweep{First: "ack", Seeds: 2, Seeded: true},
			[]string{cond + "@ack#1", cond + "@a#0", cond + "@a#1", cond + "@b#0", cond + "@b#1"}, nil},
		{"tagged", Power, Sweep{SyncPoints: true, Tag: "keep"},
			[]string{cond + "@a/keep", cond + "@b/keep", cond + "@sync-1-before/keep", cond + "@sync-1-after/keep"}, nil},
		{"seeded and tagged", Power, Sweep{First: "ack", Seeds: 2, Seeded: true, Tag: "torn"},
			[]string{cond + "@ack#1/torn", cond + "@a#0/torn", cond + "@a#1/torn", cond + "@b#0/torn", cond + "@b#1/torn"}, nil},
		{"seeds without keys", Power, Sweep{First: "ack", Seeds: 2}, []string{cond + "@ack", cond + "@a", cond + "@a", cond + "@b", cond + "@b"}, nil},
		{"sync window", Power, Sweep{First: "ack", SyncPoints: true},
			[]string{cond + "@a", cond + "@sync-4-before", cond + "@sync-4-after", cond + "@sync-5-before", cond + "@sync-5-after"},
			&Found{Points: []string{"a"}, SyncsFrom: 3, Syncs: 5}},
		{"empty sync window", Power, Sweep{First: "ack", SyncPoints: true}, []string{cond + "@a"}, &Found{Points: []string{"a"}, SyncsFrom: 5, Syncs: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sw := tc.sweep
			f := found
			if tc.found != nil {
				f = *tc.found
			}
			got, err := Plan(context.Background(), 1, nil, []Set{{Class: tc.class, Condition: cond, Sweep: &sw}}, f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for i, tr := range got {
				if tr.Index != i+1 || tr.Class != tc.class {
					t.Errorf("trial %d: index %d class %s, want index %d class %s", i, tr.Index, tr.Class, i+1, tc.class)
				}
				ids = append(ids, tr.ID())
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanSweepShard: a shard keeps the swept trials whose ids it runs,
// the ids shard.TrialID's folders hashed, "condition@key".
func TestPlanSweepShard(t *testing.T) {
	sw := Sweep{First: "ack", Extra: []string{"x", "y", "z"}, Seeds: 3, Seeded: true, Model: "torn", Layer: LayerFS}
	sets := []Set{{Class: Power, Condition: "c", Sweep: &sw}}
	found := Found{Points: []string{"a", "b", "c"}}
	part := &shard.Part{Index: 2, Count: 3}
	got, err := Plan(context.Background(), 1, part, sets, found)
	if err != nil {
		t.Fatal(err)
	}
	var want []Trial
	for i, c := range sw.Cuts(found)[1:] {
		if id := "c@" + sw.Key(c); part.Runs(id) {
			want = append(want, Trial{Class: Power, Condition: "c", Index: i + 1, Point: c.Point, Seed: c.Seed, Key: sw.Key(c), Model: "torn", Layer: LayerFS})
		}
	}
	if len(want) == 0 {
		t.Fatal("the shard runs none of the sweep; choose another part")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}
