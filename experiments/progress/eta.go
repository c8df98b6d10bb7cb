package progress

import "time"

// DefaultCost prices a process of a scenario that declares no cost.
const DefaultCost = 50 * time.Millisecond

// cost is what a process of t's scenario costs: its declared cost, or
// DefaultCost where it declares none.
func (t Tally) cost() time.Duration {
	if t.Cost <= 0 {
		return DefaultCost
	}
	return t.Cost
}

// Left estimates the time the run still needs, with parts[cur] running:
// its remaining processes at its own mean time per finished process, or,
// before any has finished, its whole count at its cost less the time
// already spent; then each later scenario's count at its cost. Costs are
// the scenarios' own (scenario.Caps.Cost), scaled by the pace of the
// scenarios already finished.
func Left(parts []Tally, cur int) time.Duration {
	if cur < 0 || cur >= len(parts) {
		return 0
	}
	pace := Pace(parts[:cur])
	est := func(t Tally) time.Duration {
		return time.Duration(float64(t.cost()) * pace)
	}
	var left time.Duration
	for i, t := range parts[cur:] {
		rem := time.Duration(max(0, t.Planned-t.Done))
		switch {
		case i > 0:
			left += est(t) * rem
		case t.Done > 0:
			left += t.Took / time.Duration(t.Done) * rem
		default:
			left += max(0, est(t)*rem-t.Took)
		}
	}
	return left
}

// Pace is how much longer than their costs the finished scenarios took:
// 2 on a machine half as fast as the one the costs were measured on. It is
// 1 with nothing finished, and kept between 1/8 and 8 so one odd scenario
// cannot throw the estimate far.
func Pace(finished []Tally) float64 {
	var took, priced float64
	for _, t := range finished {
		took += t.Took.Seconds()
		priced += t.cost().Seconds() * float64(t.Done)
	}
	if took <= 0 || priced <= 0 {
		return 1
	}
	return min(8, max(0.125, took/priced))
}
