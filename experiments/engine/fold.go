package engine

import (
	"fmt"

	"idemlab/experiments/shard"
)

// Listed is trials as a fold lists them in the whole plan
// (scenario.Folded.Plan), in order.
func Listed(trials []Trial) []shard.Trial {
	out := make([]shard.Trial, 0, len(trials))
	for _, t := range trials {
		out = append(out, t.Listed())
	}
	return out
}

// Places are the files, folders or schemas the recorded trials started
// on, each with the trial that took it. Every trial starts on a fresh
// place; shards ran on machines of their own, so only one shard's places
// need differ.
type Places map[string]string

// Take records that owner started on place in shard sh, and returns the
// owner that took it before, if one did: the finding is the caller's,
// who knows whether the two owners are one trial's steps.
func (p Places) Take(sh int, place, owner string) (prev string, taken bool) {
	key := fmt.Sprintf("%d:%s", sh, place)
	prev, taken = p[key]
	p[key] = owner
	return prev, taken
}

// KillWindowUS is the span a DelayKill trial's delay is drawn over
// (Found.WindowUS), as the run measured it and the fold derives it again
// from the record of the discovery delivery: its length in milliseconds,
// less the microseconds from its start to where the delays start, and at
// least 1.
func KillWindowUS(durationMS float64, fromUS int64) int64 {
	return max(1, int64(durationMS*1000)-fromUS)
}
