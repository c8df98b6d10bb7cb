package review

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette is colour-blind friendly (Okabe-Ito), so bars stay apart in print.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
	color.RGBA{86, 180, 233, 255},
	color.RGBA{213, 94, 0, 255},
}

// Series is one named row of values, one per category or per x.
type Series struct {
	Name   string
	Values []float64
}

// XYSeries is one named line.
type XYSeries struct {
	Name string
	X, Y []float64
	// Dashed draws a reference line, such as a simulated floor.
	Dashed bool
}

// barChart draws grouped bars, one group per category, and marks each
// expected value with a cross so a reader sees where they part.
func barChart(title, ylabel string, categories []string, bars []Series, expected []Series) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	w := vg.Points(14)
	n := len(bars)
	for i, s := range bars {
		if len(s.Values) != len(categories) {
			return nil, fmt.Errorf("series %s has %d values for %d categories", s.Name, len(s.Values), len(categories))
		}
		b, err := plotter.NewBarChart(plotter.Values(s.Values), w)
		if err != nil {
			return nil, fmt.Errorf("bars %s: %w", s.Name, err)
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(n-1)/2) * w
		p.Add(b)
		p.Legend.Add(s.Name, b)
	}
	for i, s := range expected {
		if len(s.Values) != len(categories) {
			return nil, fmt.Errorf("series %s has %d values for %d categories", s.Name, len(s.Values), len(categories))
		}
		// The crosses sit over the bar of the same index, so expected and
		// observed are read at one glance.
		off := (float64(i) - float64(n-1)/2) * 14
		pts := make(plotter.XYs, len(s.Values))
		for j, v := range s.Values {
			pts[j].X, pts[j].Y = float64(j), v
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("markers %s: %w", s.Name, err)
		}
		sc.GlyphStyle.Shape = offsetGlyph{draw.CrossGlyph{}, vg.Points(off)}
		sc.GlyphStyle.Radius = vg.Points(5)
		sc.GlyphStyle.Color = color.Black
		p.Add(sc)
		if i == 0 {
			p.Legend.Add("expected (oracle)", sc)
		}
	}
	// Headroom above the tallest bar keeps the legend off the bars.
	top := 1.0
	for _, s := range append(append([]Series{}, bars...), expected...) {
		for _, v := range s.Values {
			top = math.Max(top, v)
		}
	}
	p.Y.Max = top * 1.45
	p.NominalX(categories...)
	p.X.Tick.Label.Rotation = math.Pi / 9
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Add(plotter.NewGrid())
	return renderSVG(p, 20*vg.Centimeter, 11*vg.Centimeter)
}

// offsetGlyph shifts a glyph sideways, to sit over one bar of a group.
type offsetGlyph struct {
	draw.GlyphDrawer
	dx vg.Length
}

func (g offsetGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	pt.X += g.dx
	g.GlyphDrawer.DrawGlyph(c, sty, pt)
}

// lineChart draws lines with points; dashed series are reference lines.
func lineChart(title, xlabel, ylabel string, series []XYSeries) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("series %s has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j].X, pts[j].Y = s.X[j], s.Y[j]
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("line %s: %w", s.Name, err)
		}
		col := palette[i%len(palette)]
		l.Color = col
		sc.Color = col
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			sc.Radius = 0
		}
		p.Add(l, sc)
		p.Legend.Add(s.Name, l)
	}
	top := 1.0
	for _, s := range series {
		for _, v := range s.Y {
			top = math.Max(top, v)
		}
	}
	// Headroom above the highest point keeps the legend off the lines.
	p.Y.Max = top * 1.35
	p.Add(plotter.NewGrid())
	return renderSVG(p, 20*vg.Centimeter, 10*vg.Centimeter)
}

// renderSVG draws the plot to SVG without embedded fonts, so the HTML stays
// small and fetches nothing.
func renderSVG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("render svg: %w", err)
	}
	return buf.Bytes(), nil
}
