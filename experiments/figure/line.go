package figure

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// LineChart draws series of points joined by lines, such as milliseconds
// per trial, with optional horizontal reference lines such as a simulated
// floor.
type LineChart struct {
	Title string
	// Desc is the text a screen reader gives; empty means a generated
	// summary.
	Desc   string
	XLabel string
	YLabel string
	Series []XYSeries
	// References are horizontal dashed lines across the whole plot.
	References []Reference
}

// XYSeries is one named line. A NaN Y is a gap: the line breaks there.
type XYSeries struct {
	Name string
	X, Y []float64
}

// Reference is a named horizontal line at Y.
type Reference struct {
	Name string
	Y    float64
	// Series names the series this line belongs to, such as the floor of
	// one condition; it is then drawn in that series' colour. Empty means
	// grey.
	Series string
}

// refColor is the colour of reference r: its series' or grey.
func (c LineChart) refColor(r Reference) string {
	for i, s := range c.Series {
		if r.Series != "" && s.Name == r.Series {
			return palette[i%len(palette)]
		}
	}
	return mutedColor
}

const linePlotHeight = 220.0

func (c LineChart) validate() error {
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("line chart %q: series %q has %d x and %d y values", c.Title, s.Name, len(s.X), len(s.Y))
		}
		for i, x := range s.X {
			if !present(x) && present(s.Y[i]) {
				return fmt.Errorf("line chart %q: series %q: point %d has a y but no x", c.Title, s.Name, i)
			}
		}
		if err := finite(s.X, s.Y); err != nil {
			return fmt.Errorf("line chart %q: series %q: %w", c.Title, s.Name, err)
		}
	}
	for _, r := range c.References {
		if !present(r.Y) || math.IsInf(r.Y, 0) {
			return fmt.Errorf("line chart %q: reference %q has no finite value", c.Title, r.Name)
		}
		if r.Series != "" && c.refColor(r) == mutedColor {
			return fmt.Errorf("line chart %q: reference %q belongs to series %q, which is not in the chart", c.Title, r.Name, r.Series)
		}
	}
	return nil
}

// points lists the indexes of s that have both coordinates.
func (s XYSeries) points() (idx []int) {
	for i := range s.X {
		if present(s.X[i]) && present(s.Y[i]) {
			idx = append(idx, i)
		}
	}
	return idx
}

// SVG renders the chart.
func (c LineChart) SVG() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	var shown []int
	var xs, ys [][]float64
	for i, s := range c.Series {
		if len(s.points()) > 0 {
			shown = append(shown, i)
			xs, ys = append(xs, s.X), append(ys, s.Y)
		}
	}
	refs := make([]float64, len(c.References))
	for i, r := range c.References {
		refs[i] = r.Y
	}
	ys = append(ys, refs)
	xlo, xhi, ok := dataRange(xs...)
	if !ok {
		xlo, xhi = 0, 1
	}
	ylo, yhi, ok := dataRange(ys...)
	if !ok {
		ylo, yhi = 0, 0
	}
	xa := niceAxis(xlo, xhi, allIntegers(xs...))
	// Timings and counts are read against zero; a y axis starting higher
	// would exaggerate small differences.
	ya := niceAxis(math.Min(ylo, 0), math.Max(yhi, 0), allIntegers(ys...))

	var items []legendItem
	for _, i := range shown {
		items = append(items, legendItem{name: c.Series[i].Name, color: palette[i%len(palette)], kind: swatchLine})
	}
	for _, r := range c.References {
		items = append(items, legendItem{name: r.Name, color: c.refColor(r), kind: swatchDashed})
	}

	var cv canvas
	top := header(&cv, c.Title, items) + 18
	bottom := top + linePlotHeight
	left := 12 + 22 + yLabelsWidth(ya) + 8
	if c.YLabel == "" {
		left -= 22
	}
	right := width - 16 - textWidth(xa.format(xa.max), tickSize)/2
	y := ya.scale(bottom, top)
	x := xa.scale(left, right)
	yAxis(&cv, ya, left, right, y, c.YLabel, top, bottom)
	for _, t := range xa.ticks {
		cv.line(x(t), bottom, x(t), bottom+4, axisColor, 1, "")
		cv.text(x(t), bottom+17, tickSize, "middle", mutedColor, "", xa.format(t), "")
	}
	cv.line(left, bottom, right, bottom, axisColor, 1, "")

	for _, r := range c.References {
		cv.raw(`<g><title>`, escape(fmt.Sprintf("%s: %s", r.Name, ya.formatValue(r.Y))), "</title>\n")
		cv.line(left, y(r.Y), right, y(r.Y), c.refColor(r), 1.5, "6 4")
		cv.raw("</g>\n")
	}
	for _, i := range shown {
		s := c.Series[i]
		color := palette[i%len(palette)]
		// A gap (NaN) ends one polyline and the next point starts another.
		var seg []string
		flush := func() {
			if len(seg) > 1 {
				cv.raw(`<polyline points="`, strings.Join(seg, " "), `" fill="none" stroke="`, color, `" stroke-width="2"/>`, "\n")
			}
			seg = seg[:0]
		}
		for k := range s.X {
			if !present(s.X[k]) || !present(s.Y[k]) {
				flush()
				continue
			}
			seg = append(seg, num(x(s.X[k]))+","+num(y(s.Y[k])))
		}
		flush()
		for _, k := range s.points() {
			tip := fmt.Sprintf("%s: %s %s, %s", s.Name, or(c.XLabel, "x"), xa.formatValue(s.X[k]), ya.formatValue(s.Y[k]))
			cv.raw(`<circle cx="`, num(x(s.X[k])), `" cy="`, num(y(s.Y[k])), `" r="3" fill="`, color, `"><title>`, escape(tip), "</title></circle>\n")
		}
	}
	height := bottom + 26
	if c.XLabel != "" {
		cv.text((left+right)/2, height+8, labelSize, "middle", inkColor, "", c.XLabel, "")
		height += 18
	}
	return document(height+6, title(c.Title, "Line chart"), c.describe(shown), &cv), nil
}

func (c LineChart) describe(shown []int) string {
	if c.Desc != "" {
		return c.Desc
	}
	var names []string
	for _, i := range shown {
		names = append(names, c.Series[i].Name)
	}
	d := fmt.Sprintf("Line chart of %s by %s; series: %s.", or(c.YLabel, "y"), or(c.XLabel, "x"), strings.Join(names, ", "))
	for _, r := range c.References {
		d += fmt.Sprintf(" Reference line %s at %s.", r.Name, strconv.FormatFloat(r.Y, 'f', -1, 64))
	}
	return d
}
