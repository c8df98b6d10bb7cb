package engine

import (
	"strconv"

	"idemlab/worker/protocol"
)

// Sweep plans a set over point × seed, as durability's matrix does, in
// place of its class's own plan: the discovery's point first, then the
// points the discovery passed, then Extra, then (SyncPoints) a cut just
// before and just after each sync the discovery's first process made
// (those past Found.SyncsFrom);
// each point with Seeds seeds in turn. The discovery delivery is the
// sweep's first trial (its point, seed 0), so the plan leaves it out.
//
// A swept trial's id is "condition@key" (Trial.ID), its key the point,
// with "#seed" under Seeded: the ids durability's folders have always
// recorded, which its shard plans hash.
type Sweep struct {
	First      string
	Extra      []string
	SyncPoints bool
	// Seeds is how many seeds each point runs, at least one.
	Seeds  int
	Seeded bool
	// Model is what the trials' cuts leave (a Power trial's Model).
	Model string
	// Layer is where the trials' cuts are made (a Power trial's Layer).
	Layer string
	// Tag, when set, ends every key, "point/tag": sets of one condition
	// that sweep the same points (under several models) tell their
	// trials apart by it.
	Tag string
}

// Cut is one trial of a sweep: a point and a seed index.
type Cut struct {
	Point string
	Seed  int
}

// Cuts lists every trial of the sweep in run order, the discovery's
// first, from what the discovery found.
func (s Sweep) Cuts(found Found) []Cut {
	all := append(append([]string{s.First}, found.Points...), s.Extra...)
	if s.SyncPoints {
		for i := found.SyncsFrom + 1; i <= found.Syncs; i++ {
			all = append(all, protocol.SyncCut{N: i}.Point(), protocol.SyncCut{N: i, After: true}.Point())
		}
	}
	var out []Cut
	for _, pt := range all {
		for j := range max(1, s.Seeds) {
			out = append(out, Cut{Point: pt, Seed: j})
		}
	}
	return out
}

// Key is a trial's key in its condition: its point, under Seeded with its
// seed index, "point#seed", and with the set's Tag, "point/tag".
func (s Sweep) Key(c Cut) string {
	k := c.Point
	if s.Seeded {
		k += "#" + strconv.Itoa(c.Seed)
	}
	if s.Tag != "" {
		k += "/" + s.Tag
	}
	return k
}

// planSweep is every cut of the sweep but the discovery's, numbered from 1.
func planSweep(in Input) []Trial {
	cuts := in.Sweep.Cuts(in.Found)
	out := make([]Trial, 0, len(cuts))
	for i, c := range cuts[1:] {
		t := in.trial(i + 1)
		t.Point, t.Seed, t.Key, t.Model, t.Layer = c.Point, c.Seed, in.Sweep.Key(c), in.Sweep.Model, in.Sweep.Layer
		out = append(out, t)
	}
	return out
}
