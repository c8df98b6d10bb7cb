package engine_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/durability"
	"idemlab/experiments/engine"
	"idemlab/experiments/explore"
	"idemlab/experiments/pattern"
	wp "idemlab/worker/pattern"
)

// TestLabels: each vocabulary's labels read back as their classes, no
// two classes share one, and every constant a scenario records or reads
// (older folders' kinds among them) is the registry's spelling of the
// class it always named. A class added since may have labels of its own:
// it needs no line here.
func TestLabels(t *testing.T) {
	tests := []struct {
		vocab string
		kinds map[string]engine.Kind
	}{
		{engine.Explore, map[string]engine.Kind{
			explore.KindDiscovery: engine.None, explore.KindSweep: engine.Points, explore.KindHits: engine.CrashAtHit,
			explore.KindKill: engine.DelayKill, explore.KindRace: engine.Concurrent, explore.KindTakeover: engine.Takeover,
		}},
		{engine.Pattern, map[string]engine.Kind{
			pattern.KindDiscovery: engine.None, pattern.KindPoint: engine.Points, pattern.KindHits: engine.CrashAtHit,
			pattern.KindKill: engine.DelayKill, pattern.KindRace: engine.Concurrent, pattern.KindPower: engine.Power,
		}},
		{engine.Durability, map[string]engine.Kind{
			durability.KindKill: engine.Points, durability.KindPower: engine.Power, durability.KindServer: engine.ServerCrash,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.vocab, func(t *testing.T) {
			got := map[string]engine.Kind{}
			for _, c := range engine.Classes {
				l := engine.Label(tc.vocab, c.Kind)
				if l == "" {
					continue
				}
				if k, ok := engine.KindOf(tc.vocab, l); !ok || k != c.Kind {
					t.Errorf("label %q of %s reads back as %q", l, c.Kind, k)
				}
				if _, known := tc.kinds[l]; known {
					got[l] = c.Kind
				}
			}
			if diff := cmp.Diff(tc.kinds, got); diff != "" {
				t.Errorf("labels (-the scenario's constants +the registry):\n%s", diff)
			}
		})
	}
	if k, ok := engine.KindOf(engine.Explore, ""); ok {
		t.Errorf("the empty label reads as %s", k)
	}
}

// TestFaultWords: every fault a pattern file names, and its discovery,
// names the classes it ran before the registry spelled them, and the
// words run in the order they always ran; a word added since follows
// them and needs no line here.
func TestFaultWords(t *testing.T) {
	want := map[string][]engine.Kind{
		pattern.FaultNone: {engine.None}, wp.FaultPoints: {engine.Points}, wp.FaultRandom: {engine.CrashAtHit, engine.DelayKill},
		wp.FaultConcurrent: {engine.Concurrent}, wp.FaultPower: {engine.Power},
	}
	got := map[string][]engine.Kind{}
	for f := range want {
		got[f] = engine.ClassesOf(f)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classes of each fault word (-want +got):\n%s", diff)
	}
	order := []string{wp.FaultPoints, wp.FaultRandom, wp.FaultConcurrent, wp.FaultPower}
	if words := engine.FaultWords(); len(words) < len(order) || !slices.Equal(words[:len(order)], order) || slices.Contains(words, pattern.FaultNone) {
		t.Errorf("FaultWords() = %v, want %v first and no %q", words, order, pattern.FaultNone)
	}
}
