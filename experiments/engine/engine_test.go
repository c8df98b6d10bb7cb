package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"idemlab/experiments/seed"
	"idemlab/experiments/shard"
)

// TestPlan: each class plans the trials, indices and seeded draws the
// scenarios' own loops drew before the engine, computed here from seed.*.
func TestPlan(t *testing.T) {
	const s, cond = uint64(7), "p/c"
	pts := []string{"a", "b", "c"}
	found := Found{Points: pts, WindowUS: 5000}
	tests := []struct {
		name string
		set  Set
		want []Trial
	}{
		{"none", Set{Class: None, Condition: cond}, []Trial{{Class: None, Condition: cond}}},
		{"points", Set{Class: Points, Condition: cond, Indices: []int{9}}, []Trial{
			{Class: Points, Condition: cond, Index: 0, Point: "a"},
			{Class: Points, Condition: cond, Index: 1, Point: "b"},
			{Class: Points, Condition: cond, Index: 2, Point: "c"},
		}},
		{"takeover", Set{Class: Takeover, Condition: cond}, []Trial{
			{Class: Takeover, Condition: cond, Index: 0, Point: "a"},
			{Class: Takeover, Condition: cond, Index: 1, Point: "b"},
			{Class: Takeover, Condition: cond, Index: 2, Point: "c"},
		}},
		{"crash at hit", Set{Class: CrashAtHit, Condition: cond, Indices: []int{0, 4}}, []Trial{
			{Class: CrashAtHit, Condition: cond, Index: 0, K: seed.CrashK(s, cond, 0, 3)},
			{Class: CrashAtHit, Condition: cond, Index: 4, K: seed.CrashK(s, cond, 4, 3)},
		}},
		{"delay kill after the hits", Set{Class: DelayKill, Condition: cond, Indices: Count(2, 2)}, []Trial{
			{Class: DelayKill, Condition: cond, Index: 2, KillUS: seed.KillDelayUS(s, cond, 2, 5000)},
			{Class: DelayKill, Condition: cond, Index: 3, KillUS: seed.KillDelayUS(s, cond, 3, 5000)},
		}},
		{"concurrent", Set{Class: Concurrent, Condition: cond, Indices: []int{0}, Racers: 2}, []Trial{
			{Class: Concurrent, Condition: cond, Racers: 2},
		}},
		{"concurrent killed", Set{Class: Concurrent, Condition: cond, Indices: []int{1}, Racers: 3, RaceFault: DelayKill}, []Trial{
			{Class: Concurrent, Condition: cond, Index: 1, Racers: 3, KillsUS: seed.RaceKillsUS(s, cond, 1, 3, 5000)},
		}},
		{"concurrent crashed", Set{Class: Concurrent, Condition: cond, Indices: []int{5}, Racers: 2, RaceFault: CrashAtHit}, []Trial{
			{Class: Concurrent, Condition: cond, Index: 5, Racers: 2, CrashK: seed.RaceCrashK(s, cond, 5, 2, 3)},
		}},
		{"power legacy", Set{Class: Power, Condition: cond, Legacy: true}, []Trial{
			{Class: Power, Condition: cond, Index: 0, Point: "a"},
			{Class: Power, Condition: cond, Index: 1, Point: "b"},
			{Class: Power, Condition: cond, Index: 2, Point: "c"},
			{Class: Power, Condition: cond, Index: 3, Point: PointACK},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(context.Background(), s, nil, []Set{tc.set}, found)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanPower: every model cuts at every point, the ACK and the open
// ACK, numbered model by model.
func TestPlanPower(t *testing.T) {
	got, err := Plan(context.Background(), 1, nil, []Set{{Class: Power, Condition: "c"}}, Found{Points: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var want []Trial
	for _, m := range PowerModels {
		for _, pt := range []string{"a", PointACK, PointACKOpen} {
			want = append(want, Trial{Class: Power, Condition: "c", Index: len(want), Point: pt, Model: m})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

// TestPlanShard: the shards of a plan split its trials by id, together
// exactly the whole plan.
func TestPlanShard(t *testing.T) {
	sets := []Set{{Class: CrashAtHit, Condition: "x", Indices: Count(0, 20)}, {Class: Points, Condition: "y"}}
	found := Found{Points: []string{"a", "b", "c", "d"}, WindowUS: 10}
	whole, err := Plan(context.Background(), 3, nil, sets, found)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3} {
		var joined []Trial
		for i := 1; i <= n; i++ {
			part := &shard.Part{Index: i, Count: n}
			got, err := Plan(context.Background(), 3, part, sets, found)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range got {
				if shard.Of(tr.ID(), n) != i {
					t.Errorf("shard %d/%d plans %s, which is shard %d's", i, n, tr.ID(), shard.Of(tr.ID(), n))
				}
			}
			joined = append(joined, got...)
		}
		if diff := cmp.Diff(whole, joined, byID); diff != "" {
			t.Errorf("%d shards joined (-whole +joined):\n%s", n, diff)
		}
	}
}

func TestTrialID(t *testing.T) {
	if got, want := (Trial{Condition: "a/b", Index: 12}).ID(), shard.TrialID("a/b", 12); got != want {
		t.Errorf("ID = %q, want %q", got, want)
	}
}

func TestPlanRefuses(t *testing.T) {
	if _, err := Plan(context.Background(), 0, nil, []Set{{Class: "nope", Condition: "c"}}, Found{}); err == nil {
		t.Error("an unregistered class planned")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Plan(ctx, 0, nil, []Set{{Class: Points, Condition: "c"}}, Found{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled plan: %v, want context.Canceled", err)
	}
}

// TestRegistry: one class per kind, each with a plan; the OS schedules
// the kills and the races only.
func TestRegistry(t *testing.T) {
	var scheduled []Kind
	for i, c := range Classes {
		if c.Plan == nil {
			t.Errorf("class %s plans nothing", c.Kind)
		}
		if slices.IndexFunc(Classes, func(o Class) bool { return o.Kind == c.Kind }) != i {
			t.Errorf("class %s is registered twice", c.Kind)
		}
		if c.Scheduled {
			scheduled = append(scheduled, c.Kind)
		}
	}
	if diff := cmp.Diff([]Kind{DelayKill, Concurrent}, scheduled); diff != "" {
		t.Errorf("scheduled classes (-want +got):\n%s", diff)
	}
}

// byID compares lists of trials in any order.
var byID = cmpopts.SortSlices(func(a, b Trial) bool { return a.ID() < b.ID() })

// recorder is a subject that records what it is asked to deliver.
type recorder struct {
	mu     sync.Mutex
	got    []Trial
	found  Found
	failAt string
}

func (r *recorder) Deliver(_ context.Context, t Trial) (Found, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, t)
	if t.ID() == r.failAt {
		return Found{}, errors.New("boom")
	}
	return r.found, nil
}

// TestExecute: discovery first, then the parallel classes, then the
// sequential ones, unit by unit; the trials returned are those delivered.
func TestExecute(t *testing.T) {
	a := &recorder{found: Found{Points: []string{"p", "q"}, WindowUS: 9}}
	b := &recorder{found: Found{Points: []string{"r"}}}
	run := Run{Seed: 5, Parallel: 1, Units: []Unit{
		{Subject: a, Discovery: "a/none", Sets: []Set{{Class: Concurrent, Condition: "a/race", Indices: Count(0, 1), Racers: 2}, {Class: Points, Condition: "a/points"}}},
		{Subject: b, Discovery: "b/none", Sets: []Set{{Class: DelayKill, Condition: "b/kill", Indices: Count(0, 1)}}},
	}}
	ran, err := run.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Trial{
		{Class: None, Condition: "a/none"}, {Class: None, Condition: "b/none"},
		{Class: Points, Condition: "a/points", Point: "p"}, {Class: Points, Condition: "a/points", Index: 1, Point: "q"},
		{Class: DelayKill, Condition: "b/kill", KillUS: seed.KillDelayUS(5, "b/kill", 0, 0)},
		{Class: Concurrent, Condition: "a/race", Racers: 2},
	}
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, append(a.got, b.got...), byID); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	a.failAt, a.got = "a/points#1", nil
	if _, err := run.Execute(context.Background()); err == nil {
		t.Error("a subject's failure did not stop the run")
	}
	if slices.ContainsFunc(a.got, func(t Trial) bool { return t.Class == Concurrent }) {
		t.Error("the races ran after a parallel trial failed")
	}
}
