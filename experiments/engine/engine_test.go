package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"idemlab/experiments/harness"
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

// TestExecute: the discoveries first, then the parallel classes, races
// among them, then the sequential ones, unit by unit; the trials returned
// are those delivered.
func TestExecute(t *testing.T) {
	a := &recorder{found: Found{Points: []string{"p", "q"}, WindowUS: 9}}
	b := &recorder{found: Found{Points: []string{"r"}}}
	run := Run{Seed: 5, Parallel: 1, Units: []Unit{
		{Subject: a, Discovery: "a/none", Sets: []Set{{Class: ServerCrash, Condition: "a/server"}, {Class: Concurrent, Condition: "a/race", Indices: Count(0, 1), Racers: 2}, {Class: Points, Condition: "a/points"}}},
		{Subject: b, Discovery: "b/none", Sets: []Set{{Class: DelayKill, Condition: "b/kill", Indices: Count(0, 1)}}},
	}}
	ran, err := run.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Trial{
		{Class: None, Condition: "a/none"}, {Class: None, Condition: "b/none"},
		{Class: Concurrent, Condition: "a/race", Racers: 2},
		{Class: Points, Condition: "a/points", Point: "p"}, {Class: Points, Condition: "a/points", Index: 1, Point: "q"},
		{Class: DelayKill, Condition: "b/kill", KillUS: seed.KillDelayUS(5, "b/kill", 0, 0)},
		{Class: ServerCrash, Condition: "a/server", Point: "p"}, {Class: ServerCrash, Condition: "a/server", Index: 1, Point: "q"},
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
	if slices.ContainsFunc(a.got, func(t Trial) bool { return t.Class == ServerCrash }) {
		t.Error("the sequential class ran after a parallel trial failed")
	}
}

// gauge is a subject whose every delivery takes a while, counting how
// many deliveries of the gauges sharing its counts run at once.
type gauge struct {
	mu *sync.Mutex
	// now counts the deliveries running, by class, peak the most of
	// every class at once.
	now  map[Kind]int
	peak *int
	// during counts, per class, the deliveries that ran while another of
	// the same class was running.
	during map[Kind]int
	found  Found
}

func newGauges(n int) []*gauge {
	var mu sync.Mutex
	var peak int
	now, during := map[Kind]int{}, map[Kind]int{}
	out := make([]*gauge, n)
	for i := range out {
		out[i] = &gauge{mu: &mu, now: now, peak: &peak, during: during, found: Found{Points: []string{"a", "b", "c"}}}
	}
	return out
}

func (g *gauge) Deliver(_ context.Context, t Trial) (Found, error) {
	g.mu.Lock()
	g.now[t.Class]++
	all := 0
	for _, n := range g.now {
		all += n
	}
	*g.peak = max(*g.peak, all)
	g.mu.Unlock()
	time.Sleep(15 * time.Millisecond)
	g.mu.Lock()
	if g.now[t.Class] > 1 {
		g.during[t.Class]++
	}
	g.now[t.Class]--
	g.mu.Unlock()
	return g.found, nil
}

// TestExecuteSideBySide: the runs that share slots keep at most that many
// deliveries going together, and use them: discoveries go side by side,
// and so do races and points; a sequential class's trials never do. With
// one slot nothing overlaps.
func TestExecuteSideBySide(t *testing.T) {
	tests := []struct {
		slots    int
		overlaps bool
	}{{1, false}, {3, true}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.slots, " slots"), func(t *testing.T) {
			gs := newGauges(4)
			slots := harness.NewSlots(tc.slots)
			runs := make([]func(context.Context) error, 2)
			for r := range runs {
				var units []Unit
				for _, g := range gs[2*r : 2*r+2] {
					units = append(units, Unit{Subject: g, Discovery: fmt.Sprint("u", r, "/none"), Sets: []Set{
						{Class: Concurrent, Condition: fmt.Sprint("u", r, "/race"), Indices: Count(0, 2), Racers: 2},
						{Class: Points, Condition: fmt.Sprint("u", r, "/points")},
					}})
				}
				runs[r] = func(ctx context.Context) error {
					_, err := Run{Slots: slots, Units: units}.Execute(ctx)
					return err
				}
			}
			if err := harness.RunJobs(context.Background(), len(runs), runs); err != nil {
				t.Fatal(err)
			}
			g := gs[0]
			if *g.peak > tc.slots {
				t.Errorf("%d deliveries ran at once in %d slots", *g.peak, tc.slots)
			}
			for _, k := range []Kind{None, Points} {
				if got := g.during[k] > 0; got != tc.overlaps {
					t.Errorf("%s deliveries overlapped each other: %v, want %v (%d slots)", k, got, tc.overlaps, tc.slots)
				}
			}
		})
	}
	races := newGauges(1)
	run := Run{Slots: harness.NewSlots(3), Units: []Unit{{Subject: races[0], Sets: []Set{{Class: Concurrent, Condition: "r/race", Indices: Count(0, 4), Racers: 2}}}}}
	if _, err := run.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if races[0].during[Concurrent] == 0 || *races[0].peak > 3 {
		t.Errorf("the races of one run ran up to %d at once in 3 slots, none beside another", *races[0].peak)
	}
	gs := newGauges(1)
	run = Run{Slots: harness.NewSlots(4), Units: []Unit{{Subject: gs[0], Discovery: "s/none", Sets: []Set{{Class: ServerCrash, Condition: "s/server"}}}}}
	ran, err := run.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 4 || *gs[0].peak != 1 {
		t.Errorf("ran %d trials, up to %d at once; want a discovery and 3 server crashes, one at a time", len(ran), *gs[0].peak)
	}
}

// meeter is a subject whose slotted deliveries each wait for a delivery of
// class waits to be under way, and give up after a while: they meet only
// if the waiting class runs while every slot is taken.
type meeter struct {
	waits   Kind
	started chan struct{}
	once    sync.Once
	found   Found
}

func (m *meeter) Deliver(ctx context.Context, t Trial) (Found, error) {
	if t.Class == None {
		return m.found, nil
	}
	if t.Class == m.waits {
		m.once.Do(func() { close(m.started) })
		return Found{}, nil
	}
	select {
	case <-m.started:
		return Found{}, nil
	case <-time.After(5 * time.Second):
		return Found{}, fmt.Errorf("trial %s held the only slot and no %s trial started beside it", t.ID(), m.waits)
	}
}

// TestExecuteWaitsBeside: a class that waits on a clock (takeovers) runs
// beside the slots, not in them: with one slot, held by a trial that
// waits for a takeover to start, the takeover still starts; and its
// trials keep at most as many at once as there are slots.
func TestExecuteWaitsBeside(t *testing.T) {
	var waits []Kind
	for _, c := range Classes {
		if c.Waits {
			waits = append(waits, c.Kind)
		}
	}
	if diff := cmp.Diff([]Kind{Takeover}, waits); diff != "" {
		t.Fatalf("classes that wait (-want +got):\n%s", diff)
	}
	m := &meeter{waits: Takeover, started: make(chan struct{}), found: Found{Points: []string{"a", "b"}}}
	run := Run{Slots: harness.NewSlots(1), Units: []Unit{{Subject: m, Discovery: "m/none", Sets: []Set{
		{Class: Points, Condition: "m/points"}, {Class: Takeover, Condition: "m/takeover"},
	}}}}
	ran, err := run.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 5 {
		t.Errorf("ran %d trials, want a discovery, 2 points and 2 takeovers", len(ran))
	}
	gs := newGauges(1)
	gs[0].found = Found{Points: []string{"a", "b", "c", "d", "e", "f"}}
	run = Run{Slots: harness.NewSlots(2), Units: []Unit{{Subject: gs[0], Discovery: "g/none", Sets: []Set{
		{Class: Points, Condition: "g/points"}, {Class: Takeover, Condition: "g/takeover"},
	}}}}
	if _, err := run.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if gs[0].during[Takeover] == 0 || *gs[0].peak > 4 {
		t.Errorf("takeovers beside 2 slots: up to %d deliveries at once, %d takeovers beside another; want at most 4, some", *gs[0].peak, gs[0].during[Takeover])
	}
}
