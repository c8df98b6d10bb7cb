package figure

import (
	"fmt"
	"math"
	"strings"
)

// BarChart is a grouped bar chart: one group per category, one bar per
// series that has a value there, each labelled with its value (so a zero
// is seen, not guessed), and an optional expected-value marker per bar.
type BarChart struct {
	Title string
	// Desc is the text a screen reader gives; empty means a generated
	// summary.
	Desc       string
	XLabel     string
	YLabel     string
	Categories []string
	Series     []Series
	// ExpectedName labels the markers in the legend; empty means
	// "expected".
	ExpectedName string
}

// Layout of a bar chart, in viewBox units.
const (
	barPlotHeight = 240.0
	barMaxWidth   = 44.0
	// barHeadroom keeps value labels over the tallest bar inside the SVG.
	barHeadroom = 20.0
	// zeroMark is the height drawn for a bar of value zero.
	zeroMark = 2.0
)

// validate checks that the data can be drawn.
func (c BarChart) validate() error {
	if len(c.Categories) == 0 {
		return fmt.Errorf("bar chart %q: no categories", c.Title)
	}
	for _, s := range c.Series {
		if len(s.Values) != len(c.Categories) {
			return fmt.Errorf("bar chart %q: series %q has %d values for %d categories", c.Title, s.Name, len(s.Values), len(c.Categories))
		}
		if s.Expected != nil && len(s.Expected) != len(c.Categories) {
			return fmt.Errorf("bar chart %q: series %q has %d expected values for %d categories", c.Title, s.Name, len(s.Expected), len(c.Categories))
		}
		if err := finite(s.Values, s.Expected); err != nil {
			return fmt.Errorf("bar chart %q: series %q: %w", c.Title, s.Name, err)
		}
	}
	return nil
}

// finite rejects infinities, which have no place on an axis.
func finite(vals ...[]float64) error {
	for _, vs := range vals {
		for i, v := range vs {
			if math.IsInf(v, 0) {
				return fmt.Errorf("value %d is infinite", i)
			}
		}
	}
	return nil
}

// shown lists the series that have at least one value or marker: a series
// with no data at all gets neither bars nor a legend entry.
func (c BarChart) shown() (idx []int) {
	for i, s := range c.Series {
		if _, _, ok := dataRange(s.Values, s.Expected); ok {
			idx = append(idx, i)
		}
	}
	return idx
}

// SVG renders the chart.
func (c BarChart) SVG() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	shown := c.shown()
	var all [][]float64
	for _, i := range shown {
		all = append(all, c.Series[i].Values, c.Series[i].Expected)
	}
	lo, hi, ok := dataRange(all...)
	if !ok {
		lo, hi = 0, 0
	}
	// Bars grow from zero, so zero is always on the axis.
	ax := niceAxis(math.Min(lo, 0), math.Max(hi, 0), allIntegers(all...))
	items := c.legendItems()

	var cv canvas
	top := header(&cv, c.Title, items) + barHeadroom
	bottom := top + barPlotHeight
	left := 12 + 22 + yLabelsWidth(ax) + 8
	if c.YLabel == "" {
		left -= 22
	}
	right := width - 16
	y := ax.scale(bottom, top)
	yAxis(&cv, ax, left, right, y, c.YLabel, top, bottom)

	group := (right - left) / float64(len(c.Categories))
	// One bar width for the whole chart, sized for the fullest group, so
	// equal values look equal across groups.
	most := 1
	for j := range c.Categories {
		most = max(most, len(c.present(shown, j)))
	}
	bw := math.Min(group*0.8/float64(most), barMaxWidth)
	for j, cat := range c.Categories {
		here := c.present(shown, j)
		x0 := left + group*float64(j) + (group-bw*float64(len(here)))/2
		for k, i := range here {
			c.bar(&cv, ax, y, x0+bw*float64(k), bw, i, j, cat)
		}
	}
	cv.line(left, y(0), right, y(0), axisColor, 1, "")

	height := c.categoryLabels(&cv, left, group, bottom)
	if c.XLabel != "" {
		cv.text((left+right)/2, height+14, labelSize, "middle", inkColor, "", c.XLabel, "")
		height += 22
	}
	return document(height+6, title(c.Title, "Bar chart"), c.describe(shown), &cv), nil
}

// Category labels longer than maxRotatedLabel are abbreviated when rotated;
// labels rotate only in groups narrower than rotateBelow.
const (
	maxRotatedLabel = 150.0
	rotateBelow     = 80.0
)

// categoryLabels draws the category names under their groups and returns
// the y below them. Names wrap onto up to three lines; when one would still
// be cut and groups are narrow, all are rotated instead, which suits many
// short groups. Either
// way a name that does not fit ends in "…" with its full text as tooltip.
func (c BarChart) categoryLabels(cv *canvas, left, group, bottom float64) float64 {
	wrapped := make([][]string, len(c.Categories))
	cuts := make([]bool, len(c.Categories))
	rotate := false
	maxLines := 1
	for j, cat := range c.Categories {
		wrapped[j], cuts[j] = wrap(cat, group-6, tickSize, 3)
		rotate = rotate || cuts[j]
		maxLines = max(maxLines, len(wrapped[j]))
	}
	// Wide groups keep a wrapped, abbreviated name: rotation would cost
	// height for the sake of one long label.
	rotate = rotate && group < rotateBelow
	if !rotate {
		for j, cat := range c.Categories {
			cx := left + group*(float64(j)+0.5)
			for n, l := range wrapped[j] {
				cv.text(cx, bottom+16+float64(n)*13, tickSize, "middle", inkColor, "", l, tipIf(cuts[j], cat))
			}
		}
		return bottom + 16 + float64(maxLines-1)*13 + 10
	}
	// Rotated by 40°: a label of width w reaches w·sin 40° below the axis.
	const sin40, cos40 = 0.643, 0.766
	extent := 0.0
	for j, cat := range c.Categories {
		cx := left + group*(float64(j)+0.5) + tickSize*cos40/2
		// A label reaching past the left edge of the SVG would be clipped.
		l, cut := fit(cat, math.Min(maxRotatedLabel, (cx-4)/cos40), tickSize)
		extent = math.Max(extent, textWidth(l, tickSize)*sin40)
		cv.raw(`<g transform="translate(`, num(cx), ` `, num(bottom+12), `) rotate(-40)">`)
		cv.text(0, 0, tickSize, "end", inkColor, "", l, tipIf(cut, cat))
		cv.raw("</g>\n")
	}
	return bottom + 12 + extent + 10
}

// legendItems are the series that are drawn and, if any marker is, the
// expected-value marker.
func (c BarChart) legendItems() []legendItem {
	var items []legendItem
	hasExpected := false
	for _, i := range c.shown() {
		items = append(items, legendItem{name: c.Series[i].Name, color: palette[i%len(palette)], kind: swatchBox})
		if _, _, ok := dataRange(c.Series[i].Expected); ok {
			hasExpected = true
		}
	}
	if hasExpected {
		items = append(items, legendItem{name: or(c.ExpectedName, "expected"), color: inkColor, kind: swatchCross})
	}
	return items
}

// present lists the shown series with a value or a marker in category j.
func (c BarChart) present(shown []int, j int) (here []int) {
	for _, i := range shown {
		s := c.Series[i]
		if present(s.Values[j]) || (s.Expected != nil && present(s.Expected[j])) {
			here = append(here, i)
		}
	}
	return here
}

// bar draws series i's bar in category j at x, its expected marker and
// its value label, which sits above both so neither hides the other.
func (c BarChart) bar(cv *canvas, ax axis, y func(float64) float64, x, bw float64, i, j int, cat string) {
	s := c.Series[i]
	v := s.Values[j]
	hasExp := s.Expected != nil && present(s.Expected[j])
	labelY := y(0)
	if present(v) {
		tip := fmt.Sprintf("%s, %s: %s", cat, s.Name, ax.formatValue(v))
		if hasExp {
			tip += " (expected " + ax.formatValue(s.Expected[j]) + ")"
		}
		y0, y1 := y(0), y(v)
		top, h := math.Min(y0, y1), math.Abs(y1-y0)
		if h < zeroMark {
			// A zero bar is a thin mark on the baseline, so "none" is
			// drawn rather than left blank like a missing value.
			top, h = y0-zeroMark, zeroMark
		}
		cv.rect(x+1, top, bw-2, h, palette[i%len(palette)], tip)
		labelY = math.Min(labelY, top)
	}
	if hasExp {
		r := math.Min(5, bw/2-1)
		ey := y(s.Expected[j])
		cv.cross(x+bw/2, ey, r, inkColor, fmt.Sprintf("%s, %s: expected %s", cat, s.Name, ax.formatValue(s.Expected[j])))
		labelY = math.Min(labelY, ey-r-1)
	}
	// A label wider than its bar would run into the next one; such bars
	// keep their value in the tooltip only.
	if l := ax.formatValue(v); present(v) && textWidth(l, valueSize) <= bw+2 {
		cv.text(x+bw/2, labelY-4, valueSize, "middle", mutedColor, "", l, "")
	}
}

// describe summarises the chart for a screen reader.
func (c BarChart) describe(shown []int) string {
	if c.Desc != "" {
		return c.Desc
	}
	var names []string
	for _, i := range shown {
		names = append(names, c.Series[i].Name)
	}
	return fmt.Sprintf("Bar chart of %s by %s for %d categories (%s); series: %s.",
		or(c.YLabel, "value"), or(c.XLabel, "category"), len(c.Categories), strings.Join(c.Categories, ", "), strings.Join(names, ", "))
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// title is the accessible name: the chart's title or what it is.
func title(t, kind string) string { return or(t, kind) }
