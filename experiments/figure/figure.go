// Package figure draws the report's charts as inline SVG. A chart is plain
// data (BarChart, LineChart, HeatMap) so tests can compare what is drawn;
// SVG renders it deterministically, with no dependency beyond the standard
// library, because every package a worker binary links is paid for in each
// worker's start-up.
//
// Every chart scales to the width of its container (a viewBox with
// width="100%"), uses the system sans-serif font, keeps its legend above
// the plot, and carries a <title> and <desc> for screen readers. A missing
// value is NaN: it draws nothing, and a series with no value at all is left
// out of the legend too.
package figure

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Figure is any chart this package can draw.
type Figure interface {
	SVG() ([]byte, error)
}

// Missing returns the value that marks "no data here" (NaN). Use it rather
// than 0, which is drawn as a zero-height bar.
func Missing() float64 { return math.NaN() }

// Series is one named row of values, one per category. Expected, when not
// nil, holds one marker per category (NaN for none); a bar chart draws it
// over the bar of the same series, so observed and expected are read at
// one glance.
type Series struct {
	Name     string
	Values   []float64
	Expected []float64
}

// width is the viewBox width; the SVG is scaled to its container, so this
// only sets the proportion of text to plot.
const width = 720.0

// Font sizes in viewBox units.
const (
	titleSize = 16.0
	labelSize = 12.0
	tickSize  = 11.0
	valueSize = 10.0
)

// fontFamily follows the platform's UI font, so charts match the page.
const fontFamily = `system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif`

// palette is Okabe-Ito, which stays apart for colour-blind readers and in
// greyscale print.
var palette = [...]string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// Colours of the chart furniture.
const (
	inkColor   = "#222222"
	mutedColor = "#555555"
	gridColor  = "#e3e3e3"
	axisColor  = "#888888"
)

// present reports whether v is a value rather than Missing.
func present(v float64) bool { return !math.IsNaN(v) }

// allIntegers reports whether every present value is a whole number, in
// which case an axis counts 0, 1, 2 rather than 0.00, 0.50.
func allIntegers(vals ...[]float64) bool {
	for _, vs := range vals {
		for _, v := range vs {
			if present(v) && v != math.Trunc(v) {
				return false
			}
		}
	}
	return true
}

// canvas accumulates SVG elements. Coordinates are rounded to 0.01 so the
// output is byte-for-byte stable across platforms.
type canvas struct {
	b bytes.Buffer
}

// num formats a coordinate or value for an attribute.
func num(v float64) string {
	v = math.Round(v*100) / 100
	if v == 0 {
		v = 0 // no "-0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (c *canvas) raw(parts ...string) {
	for _, p := range parts {
		c.b.WriteString(p)
	}
}

// text writes a <text> element; anchor is start, middle or end. A non-empty
// tip becomes a <title> child, the tooltip for abbreviated text.
func (c *canvas) text(x, y float64, size float64, anchor, fill, weight, s, tip string) {
	c.raw(`<text x="`, num(x), `" y="`, num(y), `" font-size="`, num(size), `"`)
	if anchor != "start" {
		c.raw(` text-anchor="`, anchor, `"`)
	}
	if fill != inkColor {
		c.raw(` fill="`, fill, `"`)
	}
	if weight != "" {
		c.raw(` font-weight="`, weight, `"`)
	}
	c.raw(`>`)
	if tip != "" {
		c.raw(`<title>`, escape(tip), `</title>`)
	}
	c.raw(escape(s), "</text>\n")
}

func (c *canvas) line(x1, y1, x2, y2 float64, stroke string, w float64, dash string) {
	c.raw(`<line x1="`, num(x1), `" y1="`, num(y1), `" x2="`, num(x2), `" y2="`, num(y2), `" stroke="`, stroke, `" stroke-width="`, num(w), `"`)
	if dash != "" {
		c.raw(` stroke-dasharray="`, dash, `"`)
	}
	c.raw("/>\n")
}

// rect writes a filled rectangle with an optional tooltip.
func (c *canvas) rect(x, y, w, h float64, fill, tip string) {
	c.raw(`<rect x="`, num(x), `" y="`, num(y), `" width="`, num(w), `" height="`, num(h), `" fill="`, fill, `"`)
	if tip == "" {
		c.raw("/>\n")
		return
	}
	c.raw(`><title>`, escape(tip), "</title></rect>\n")
}

// cross draws an × of half-size r centred on (x, y), with an optional
// tooltip.
func (c *canvas) cross(x, y, r float64, stroke, tip string) {
	c.raw(`<path d="M`, num(x-r), ` `, num(y-r), `L`, num(x+r), ` `, num(y+r), `M`, num(x-r), ` `, num(y+r), `L`, num(x+r), ` `, num(y-r), `" stroke="`, stroke, `" stroke-width="2" fill="none"`)
	if tip == "" {
		c.raw("/>\n")
		return
	}
	c.raw(`><title>`, escape(tip), "</title></path>\n")
}

// document wraps body in the <svg> element with its accessible name and
// description.
func document(height float64, title, desc string, body *canvas) []byte {
	var b bytes.Buffer
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `)
	b.WriteString(num(width) + " " + num(height))
	b.WriteString(`" width="100%" role="img" font-family="`)
	b.WriteString(escape(fontFamily))
	b.WriteString(`" fill="` + inkColor + `">` + "\n")
	b.WriteString("<title>" + escape(title) + "</title>\n")
	b.WriteString("<desc>" + escape(desc) + "</desc>\n")
	b.Write(body.b.Bytes())
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// escape makes s safe as XML text or as a double- or single-quoted
// attribute. Characters XML cannot carry at all become U+FFFD.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF) || r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// textWidth estimates the width of s at size. SVG cannot measure text
// before the browser lays it out, so layout assumes a generous average
// glyph width for sans-serif fonts and leaves slack.
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.58
}

// wrap breaks label into at most maxLines lines no wider than maxWidth,
// preferring breaks after spaces, hyphens, slashes, underscores and dots.
// When it has to cut, the last line ends in "…" and cut is true, so the
// caller can attach the full text as a tooltip.
func wrap(label string, maxWidth, size float64, maxLines int) (lines []string, cut bool) {
	fits := func(s string) bool { return textWidth(strings.TrimSpace(s), size) <= maxWidth }
	var tokens []string
	start := 0
	for i, r := range label {
		if strings.ContainsRune(" -/_.", r) {
			tokens = append(tokens, label[start:i+utf8.RuneLen(r)])
			start = i + utf8.RuneLen(r)
		}
	}
	if start < len(label) {
		tokens = append(tokens, label[start:])
	}
	cur := ""
	for _, tok := range tokens {
		if fits(cur + tok) {
			cur += tok
			continue
		}
		if cur != "" {
			lines = append(lines, strings.TrimSpace(cur))
		}
		// A token wider than a line is split by runes.
		for !fits(tok) {
			n := 1
			for n < utf8.RuneCountInString(tok) && fits(string([]rune(tok)[:n+1])) {
				n++
			}
			lines = append(lines, string([]rune(tok)[:n]))
			tok = string([]rune(tok)[n:])
		}
		cur = tok
	}
	if strings.TrimSpace(cur) != "" || len(lines) == 0 {
		lines = append(lines, strings.TrimSpace(cur))
	}
	if len(lines) <= maxLines {
		return lines, false
	}
	lines = lines[:maxLines]
	last := []rune(lines[maxLines-1])
	for len(last) > 0 && !fits(string(last)+"…") {
		last = last[:len(last)-1]
	}
	lines[maxLines-1] = strings.TrimRight(string(last), " -/_.") + "…"
	return lines, true
}

// fit shortens s with "…" until it fits maxWidth; cut says whether it had to.
func fit(s string, maxWidth, size float64) (string, bool) {
	if textWidth(s, size) <= maxWidth {
		return s, false
	}
	r := []rune(s)
	for len(r) > 0 && textWidth(string(r)+"…", size) > maxWidth {
		r = r[:len(r)-1]
	}
	return string(r) + "…", true
}

// tipIf returns full when cut is true: the tooltip of an abbreviated label.
func tipIf(cut bool, full string) string {
	if cut {
		return full
	}
	return ""
}

// swatch is how a legend entry shows its series.
type swatch int

const (
	swatchBox swatch = iota
	swatchCross
	swatchLine
	swatchDashed
)

type legendItem struct {
	name    string
	color   string
	kind    swatch
	texture Texture
}

// legend draws items in rows from (x, y) within maxWidth and returns the
// height it took. Drawn above the plot, it can never cover data.
func legend(c *canvas, items []legendItem, x, y, maxWidth float64) float64 {
	if len(items) == 0 {
		return 0
	}
	const rowH, sw, gap = 20.0, 18.0, 18.0
	cx, cy := x, y
	for _, it := range items {
		name, cut := fit(it.name, maxWidth-sw-6, labelSize)
		w := sw + 6 + textWidth(name, labelSize)
		if cx > x && cx+w > x+maxWidth {
			cx, cy = x, cy+rowH
		}
		mid := cy + rowH/2
		switch it.kind {
		case swatchBox:
			c.rect(cx, mid-6, sw, 12, it.color, "")
			if it.texture != Solid {
				c.raw(`<rect x="`, num(cx), `" y="`, num(mid-6), `" width="`, num(sw), `" height="12" fill="url(#`, textureID(it.texture, inkOn(it.color)), `)"/>`, "\n")
			}
		case swatchCross:
			c.cross(cx+sw/2, mid, 5, it.color, "")
		case swatchLine:
			c.line(cx, mid, cx+sw, mid, it.color, 2, "")
			c.raw(`<circle cx="`, num(cx+sw/2), `" cy="`, num(mid), `" r="3" fill="`, it.color, `"/>`, "\n")
		case swatchDashed:
			c.line(cx, mid, cx+sw, mid, it.color, 2, "5 3")
		}
		c.text(cx+sw+6, mid+4, labelSize, "start", inkColor, "", name, tipIf(cut, it.name))
		cx += w + gap
	}
	return cy + rowH - y
}

// header draws the title and legend from the top and returns where the
// plot may begin.
func header(c *canvas, title string, items []legendItem) float64 {
	y := 12.0
	if title != "" {
		t, cut := fit(title, width-24, titleSize)
		c.text(12, y+titleSize, titleSize, "start", inkColor, "600", t, tipIf(cut, title))
		y += titleSize + 10
	}
	y += legend(c, items, 12, y, width-24)
	return y
}

// yAxis draws horizontal grid lines and tick labels for ax over the plot
// from left to right, and the rotated axis label left of the ticks.
func yAxis(c *canvas, ax axis, left, right float64, scale func(float64) float64, label string, top, bottom float64) {
	for _, t := range ax.ticks {
		y := scale(t)
		c.line(left, y, right, y, gridColor, 1, "")
		c.text(left-6, y+4, tickSize, "end", mutedColor, "", ax.format(t), "")
	}
	if label != "" {
		mid := (top + bottom) / 2
		l, cut := fit(label, bottom-top, labelSize)
		c.raw(`<g transform="translate(`, num(16), ` `, num(mid), `) rotate(-90)">`)
		c.text(0, 0, labelSize, "middle", inkColor, "", l, tipIf(cut, label))
		c.raw("</g>\n")
	}
}

// yLabelsWidth is the room the tick labels of ax need left of the plot.
func yLabelsWidth(ax axis) float64 {
	w := 0.0
	for _, t := range ax.ticks {
		w = math.Max(w, textWidth(ax.format(t), tickSize))
	}
	return w
}
