package progress

import "time"

// Costs are the wall time one process of each scenario takes with the
// default input on a two-core machine: the scenario's time over its
// processes. They price the scenarios not yet begun; a claim pool member
// is dear because it lives through every race. The run corrects them by
// its own pace.
var Costs = map[string]time.Duration{
	"redelivery": 25 * time.Millisecond,
	"batch":      140 * time.Millisecond,
	"claim":      700 * time.Millisecond,
	"explore":    15 * time.Millisecond,
	"durability": 45 * time.Millisecond,
}

// DefaultCost prices a process of a scenario Costs does not list.
const DefaultCost = 50 * time.Millisecond

// Left estimates the time the run still needs, with parts[cur] running:
// its remaining processes at its own mean time per finished process, or,
// before any has finished, its whole count at its cost less the time
// already spent; then each later scenario's count at its cost. Costs come
// from costs, scaled by the pace of the scenarios already finished.
func Left(parts []Tally, cur int, costs map[string]time.Duration) time.Duration {
	if cur < 0 || cur >= len(parts) {
		return 0
	}
	pace := Pace(parts[:cur], costs)
	est := func(name string) time.Duration {
		c, ok := costs[name]
		if !ok {
			c = DefaultCost
		}
		return time.Duration(float64(c) * pace)
	}
	var left time.Duration
	for i, t := range parts[cur:] {
		rem := time.Duration(max(0, t.Planned-t.Done))
		switch {
		case i > 0:
			left += est(t.Name) * rem
		case t.Done > 0:
			left += t.Took / time.Duration(t.Done) * rem
		default:
			left += max(0, est(t.Name)*rem-t.Took)
		}
	}
	return left
}

// Pace is how much longer than their costs the finished scenarios took:
// 2 on a machine half as fast as the one Costs were measured on. It is 1
// with nothing finished, and kept between 1/8 and 8 so one odd scenario
// cannot throw the estimate far.
func Pace(finished []Tally, costs map[string]time.Duration) float64 {
	var took, priced float64
	for _, t := range finished {
		c, ok := costs[t.Name]
		if !ok {
			c = DefaultCost
		}
		took += t.Took.Seconds()
		priced += c.Seconds() * float64(t.Done)
	}
	if took <= 0 || priced <= 0 {
		return 1
	}
	return min(8, max(0.125, took/priced))
}
