package explore

import (
	"context"
	"encoding/json"
	"testing"

	"idemlab/experiments/scenario"
)

// TestScheduled: a condition is scheduled by the OS when its trials are
// kills after a seeded delay or races, by its kind and never by its name,
// and the oracle states it with each condition, so it is recorded.
func TestScheduled(t *testing.T) {
	for _, tt := range []struct {
		kind string
		want bool
	}{
		{KindKill, true},
		{KindRace, true},
		{KindHits, false},
		{KindSweep, false},
		{KindDiscovery, false},
		{KindTakeover, false},
	} {
		if got := (Condition{Name: "timing-x/" + tt.kind, Kind: tt.kind}).Timing(); got != tt.want {
			t.Errorf("kind %s: Timing() = %v, want %v", tt.kind, got, tt.want)
		}
	}
	p, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section)})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	exp, err := New(sourceArticles(t)).Expect(scenario.Marshal(st))
	if err != nil {
		t.Fatal(err)
	}
	byName := st.conditionsByName()
	files := map[string]bool{}
	for _, a := range st.Articles {
		for _, c := range a.Conditions {
			files[c.Name] = c.Scheduled()
		}
	}
	scheduled := 0
	for _, e := range exp {
		want, ok := files[e.Condition]
		if !ok {
			want = byName[e.Condition].Timing()
		}
		if e.Scheduled != want {
			t.Errorf("%s: the oracle states scheduled %v, want %v", e.Condition, e.Scheduled, want)
		}
		if e.Scheduled {
			scheduled++
		}
	}
	if scheduled == 0 || scheduled == len(exp) {
		t.Errorf("%d of %d conditions scheduled; the section has kills, races and seeded crashes", scheduled, len(exp))
	}
}
