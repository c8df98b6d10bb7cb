package figure

import (
	"math"
	"strconv"
)

// axis is a linear value axis: the range drawn and the ticks on it.
type axis struct {
	min, max float64
	ticks    []float64
	// decimals is how many digits tick labels show.
	decimals int
}

// targetIntervals is roughly how many gaps between ticks an axis aims for;
// the nice step may give a few more or fewer.
const targetIntervals = 5

// niceAxis covers lo..hi with ticks at a step of 1, 2 or 5 times a power
// of ten. An integer axis never steps below 1, so counts read 0, 1, 2.
func niceAxis(lo, hi float64, integer bool) axis {
	if lo > hi {
		lo, hi = hi, lo
	}
	if hi == lo {
		// A flat range still needs an axis: grow it upwards from the value
		// (or around it, for negative values).
		if hi >= 0 {
			hi = lo + 1
		} else {
			lo = hi - 1
		}
	}
	step := niceStep((hi - lo) / targetIntervals)
	if integer && step < 1 {
		step = 1
	}
	decimals := 0
	if !integer && step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	first := math.Floor(lo/step+1e-9) * step
	last := math.Ceil(hi/step-1e-9) * step
	var ticks []float64
	// Ticks are computed from their index, not summed, so float error does
	// not drift them; rounding to the shown decimals removes the rest.
	for i := 0; ; i++ {
		t := roundTo(first+float64(i)*step, decimals)
		if t > last+step*1e-6 {
			break
		}
		ticks = append(ticks, t)
	}
	return axis{min: ticks[0], max: ticks[len(ticks)-1], ticks: ticks, decimals: decimals}
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1+1e-9:
		return p
	case f <= 2+1e-9:
		return 2 * p
	case f <= 5+1e-9:
		return 5 * p
	}
	return 10 * p
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// format is a tick label.
func (a axis) format(v float64) string {
	return strconv.FormatFloat(v, 'f', a.decimals, 64)
}

// formatValue is a data label: whole numbers as such, others with one
// digit more than the axis ticks, at most three.
func (a axis) formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', min(a.decimals+1, 3), 64)
}

// scale maps a value on the axis to a coordinate between from (at min) and
// to (at max).
func (a axis) scale(from, to float64) func(float64) float64 {
	return func(v float64) float64 {
		return from + (v-a.min)/(a.max-a.min)*(to-from)
	}
}

// dataRange is the smallest and largest present value in vals, with ok
// false when there is none.
func dataRange(vals ...[]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, vs := range vals {
		for _, v := range vs {
			if present(v) && !math.IsInf(v, 0) {
				lo, hi, ok = math.Min(lo, v), math.Max(hi, v), true
			}
		}
	}
	return lo, hi, ok
}
