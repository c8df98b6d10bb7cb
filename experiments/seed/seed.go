// Package seed draws the random parts of a fault plan (which hit a crash
// comes at, how long before a kill) from a seed, a condition's name and a
// trial's index alone, so any single trial replays without the ones
// before it.
package seed

import (
	"hash/fnv"
	"math/rand/v2"
)

// Rand is the generator of one trial. A PCG keeps the stream fixed across
// Go releases.
func Rand(seed uint64, condition string, index int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(condition))
	return rand.New(rand.NewPCG(seed, h.Sum64()^(uint64(index)*0x9e3779b97f4a7c15)))
}

// CrashK is the hit at which a crash-after-hits trial crashes: 1 to n,
// where n is the number of points discovery passed; 0 when it passed none.
func CrashK(seed uint64, condition string, index, n int) int {
	if n < 1 {
		return 0
	}
	return 1 + Rand(seed, condition, index).IntN(n)
}

// KillDelayUS is a kill trial's delay from the start, 1 to windowUS
// microseconds: a uniform draw over a normal run's measured length.
func KillDelayUS(seed uint64, condition string, index int, windowUS int64) int64 {
	if windowUS < 1 {
		return 0
	}
	return 1 + Rand(seed, condition, index).Int64N(windowUS)
}

// RaceKillsUS is a race round's kills: per racer 0 (no kill, half the
// time) or a delay after the release of 1 to windowUS microseconds.
func RaceKillsUS(seed uint64, condition string, round, racers int, windowUS int64) []int64 {
	r := Rand(seed, condition, round)
	out := make([]int64, racers)
	for i := range out {
		kill := r.IntN(2) == 0
		d := int64(0)
		if windowUS > 0 {
			d = 1 + r.Int64N(windowUS)
		}
		if kill {
			out[i] = d
		}
	}
	return out
}

// RaceCrashK is a race round's crashes: per racer 0 (none, half the time)
// or the hit, 1 to n, at which it crashes.
func RaceCrashK(seed uint64, condition string, round, racers, n int) []int {
	r := Rand(seed, condition, round)
	out := make([]int, racers)
	for i := range out {
		crash := r.IntN(2) == 0
		k := 0
		if n > 0 {
			k = 1 + r.IntN(n)
		}
		if crash {
			out[i] = k
		}
	}
	return out
}

// TornSeed seeds a torn power cut's decisions, unit by unit: a function of
// the run's seed, the condition and the trial alone, so a rerun, or verify,
// tears the same bytes.
func TornSeed(seed uint64, condition string, index int) int64 {
	return Rand(seed, condition, index).Int64()
}
