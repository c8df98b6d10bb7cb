package figure

import (
	"fmt"
	"strconv"
	"strings"
)

// HeatMap is a categorical matrix: each cell of rows × columns holds one
// outcome from a small set, shown by its colour and name, such as
// "pattern × crash point → outcome".
type HeatMap struct {
	Title string
	// Desc is the text a screen reader gives; empty means a generated
	// summary that lists every cell.
	Desc string
	// RowLabel and ColLabel name what the rows and columns are.
	RowLabel string
	ColLabel string
	Rows     []string
	Cols     []string
	// Outcomes is the legend, in order. Only outcomes that occur in Cells
	// are listed.
	Outcomes []Outcome
	// Cells[r][c] is an Outcome's Name, or "" where there is no result;
	// such a cell is outlined and left empty.
	Cells [][]string
}

// Outcome is one possible cell value.
type Outcome struct {
	Name string
	// Color is "#rgb" or "#rrggbb"; empty takes the next palette colour.
	Color string
	// Label is what a cell shows, such as a short code, when Name is too
	// long for a cell; the legend keys it as "Label: Name". Empty shows
	// Name.
	Label string
	// Texture lays marks over the colour, so outcomes that share a colour
	// (one severity, say) stay apart, in greyscale print too.
	Texture Texture
}

// Texture is a pattern of marks over a cell's colour.
type Texture int

// Textures, in the order a chart hands them out.
const (
	Solid Texture = iota
	Stripes
	Dots
	Grid
)

// Textures lists the textures with marks, to hand out in turn.
var Textures = []Texture{Stripes, Dots, Grid}

// text is what a cell shows of the outcome.
func (o Outcome) text() string { return or(o.Label, o.Name) }

// legendText keys a label to its outcome.
func (o Outcome) legendText() string {
	if o.Label == "" || o.Label == o.Name {
		return o.Name
	}
	return o.Label + ": " + o.Name
}

// Layout of a heat map, in viewBox units.
const (
	cellHeight  = 30.0
	maxRowLabel = width * 0.3
)

func (h HeatMap) validate() error {
	if len(h.Rows) == 0 || len(h.Cols) == 0 {
		return fmt.Errorf("heat map %q: %d rows and %d columns; need at least one of each", h.Title, len(h.Rows), len(h.Cols))
	}
	if len(h.Cells) != len(h.Rows) {
		return fmt.Errorf("heat map %q: %d rows of cells for %d rows", h.Title, len(h.Cells), len(h.Rows))
	}
	known := map[string]bool{}
	for _, o := range h.Outcomes {
		if o.Name == "" {
			return fmt.Errorf("heat map %q: an outcome has no name", h.Title)
		}
		if o.Color != "" {
			if _, err := luminance(o.Color); err != nil {
				return fmt.Errorf("heat map %q: outcome %q: %w", h.Title, o.Name, err)
			}
		}
		if o.Texture < Solid || o.Texture > Grid {
			return fmt.Errorf("heat map %q: outcome %q: unknown texture %d", h.Title, o.Name, o.Texture)
		}
		known[o.Name] = true
	}
	for r, row := range h.Cells {
		if len(row) != len(h.Cols) {
			return fmt.Errorf("heat map %q: row %q has %d cells for %d columns", h.Title, h.Rows[r], len(row), len(h.Cols))
		}
		for c, v := range row {
			if v != "" && !known[v] {
				return fmt.Errorf("heat map %q: cell %q × %q is %q, which is not a listed outcome", h.Title, h.Rows[r], h.Cols[c], v)
			}
		}
	}
	return nil
}

// colors gives each outcome its fill: its own colour or the palette's.
func (h HeatMap) colors() map[string]string {
	m := map[string]string{}
	for i, o := range h.Outcomes {
		m[o.Name] = or(o.Color, palette[i%len(palette)])
	}
	return m
}

// rowHeight is a row's height: a cell, or more when its label wraps.
func rowHeight(lines int) float64 { return max(cellHeight, float64(lines)*13+8) }

// SVG renders the heat map.
func (h HeatMap) SVG() ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	colors := h.colors()
	used := map[string]bool{}
	for _, row := range h.Cells {
		for _, v := range row {
			used[v] = true
		}
	}
	byName := map[string]Outcome{}
	var items []legendItem
	for _, o := range h.Outcomes {
		byName[o.Name] = o
		if used[o.Name] {
			items = append(items, legendItem{name: o.legendText(), color: colors[o.Name], kind: swatchBox, texture: o.Texture})
		}
	}

	var cv canvas
	cv.textureDefs(items)
	top := header(&cv, h.Title, items) + 8
	rowW := textWidth(h.RowLabel, labelSize)
	for _, r := range h.Rows {
		rowW = max(rowW, textWidth(r, tickSize))
	}
	left := 12 + min(rowW, maxRowLabel) + 10
	right := width - 12
	cw := (right - left) / float64(len(h.Cols))
	gridTop := h.columnHeads(&cv, top, left, right, cw)
	if h.RowLabel != "" {
		l, cut := fit(h.RowLabel, left-20, labelSize)
		cv.text(12, gridTop-9, labelSize, "start", inkColor, "600", l, tipIf(cut, h.RowLabel))
	}

	y := gridTop
	for r, row := range h.Rows {
		// Row labels wrap rather than lose their end, which is where a
		// crash point's name differs from its neighbour's.
		lines, cut := wrap(row, left-20, tickSize, 3)
		rh := rowHeight(len(lines))
		y0 := y + rh/2 + 4 - float64(len(lines)-1)*13/2
		for n, l := range lines {
			cv.text(left-8, y0+float64(n)*13, tickSize, "end", inkColor, "", l, tipIf(cut, row))
		}
		for c, v := range h.Cells[r] {
			x := left + cw*float64(c)
			if v == "" {
				// No result: an outline keeps the grid readable without
				// inventing an outcome.
				cv.raw(`<rect x="`, num(x+1.5), `" y="`, num(y+1.5), `" width="`, num(cw-3), `" height="`, num(rh-3), `" fill="none" stroke="`, gridColor, `" stroke-dasharray="3 3"><title>`, escape(row+" × "+h.Cols[c]+": no result"), "</title></rect>\n")
				continue
			}
			cv.cell(x, y, cw, rh, colors[v], byName[v], row+" × "+h.Cols[c]+": "+v)
		}
		y += rh
	}
	return document(y+12, title(h.Title, "Heat map"), h.describe(), &cv), nil
}

// columnHeads draws the column headers, wrapped above their columns, and
// the column axis name over them, and returns where the grid begins.
func (h HeatMap) columnHeads(cv *canvas, top, left, right, cw float64) float64 {
	headLines := 1
	heads := make([][]string, len(h.Cols))
	cuts := make([]bool, len(h.Cols))
	for c, col := range h.Cols {
		heads[c], cuts[c] = wrap(col, cw-6, tickSize, 3)
		headLines = max(headLines, len(heads[c]))
	}
	if h.ColLabel != "" {
		l, cut := fit(h.ColLabel, right-left, labelSize)
		cv.text((left+right)/2, top+labelSize, labelSize, "middle", inkColor, "600", l, tipIf(cut, h.ColLabel))
		top += labelSize + 8
	}
	gridTop := top + float64(headLines)*13 + 6
	for c := range h.Cols {
		cx := left + cw*(float64(c)+0.5)
		// Bottom-align headers so short ones sit right over the grid.
		y0 := gridTop - 6 - float64(len(heads[c])-1)*13 - 3
		for n, l := range heads[c] {
			cv.text(cx, y0+float64(n)*13, tickSize, "middle", inkColor, "", l, tipIf(cuts[c], h.Cols[c]))
		}
	}
	return gridTop
}

// cell draws one filled cell: its colour (with the tooltip), its texture
// and its label in black or white, whichever reads on the colour.
func (c *canvas) cell(x, y, w, h float64, color string, o Outcome, tip string) {
	c.rect(x+1, y+1, w-2, h-2, color, tip)
	ink := inkOn(color)
	if o.Texture != Solid {
		c.raw(`<rect x="`, num(x+1), `" y="`, num(y+1), `" width="`, num(w-2), `" height="`, num(h-2), `" fill="url(#`, textureID(o.Texture, ink), `)" pointer-events="none"/>`, "\n")
	}
	name, _ := fit(o.text(), w-8, valueSize+1)
	// The cell's own <title> already holds the full text; the label
	// ignores the pointer so hovering it shows that tooltip. A halo in the
	// cell's colour keeps it readable over a texture.
	c.raw(`<text x="`, num(x+w/2), `" y="`, num(y+h/2+4), `" font-size="`, num(valueSize+1), `" text-anchor="middle" fill="`, ink, `" stroke="`, color, `" stroke-width="3" paint-order="stroke" font-weight="600" pointer-events="none">`, escape(name), "</text>\n")
}

// describe lists every cell, row by row: the matrix is small and this is
// the only way a screen reader gets it.
func (h HeatMap) describe() string {
	if h.Desc != "" {
		return h.Desc
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Matrix of %s by %s.", or(h.RowLabel, "row"), or(h.ColLabel, "column"))
	for r, row := range h.Rows {
		var cells []string
		for c, v := range h.Cells[r] {
			cells = append(cells, h.Cols[c]+": "+or(v, "no result"))
		}
		fmt.Fprintf(&b, " %s: %s.", row, strings.Join(cells, ", "))
	}
	return b.String()
}

// luminance is the relative luminance (0 dark, 1 light) of "#rgb" or
// "#rrggbb", which picks black or white text for a cell.
func luminance(hex string) (float64, error) {
	s := strings.TrimPrefix(hex, "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	if len(s) != 6 || !strings.HasPrefix(hex, "#") {
		return 0, fmt.Errorf("colour %q is not #rgb or #rrggbb", hex)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("colour %q is not #rgb or #rrggbb", hex)
	}
	r, g, b := float64(v>>16&0xff)/255, float64(v>>8&0xff)/255, float64(v&0xff)/255
	return 0.2126*r + 0.7152*g + 0.0722*b, nil
}

// textureNames name the textures in element ids.
var textureNames = map[Texture]string{Stripes: "stripes", Dots: "dots", Grid: "grid"}

// textureID is the id of a texture whose marks are ink. Ids are fixed by
// their content, so two charts inline in one page that define the same id
// define the same pattern.
func textureID(t Texture, ink string) string {
	shade := "light"
	if ink == "#000000" {
		shade = "dark"
	}
	return "idemlab-" + textureNames[t] + "-" + shade
}

// inkOn is the text and mark colour that reads on color.
func inkOn(color string) string {
	if lum, _ := luminance(color); lum > 0.45 {
		return "#000000"
	}
	return "#ffffff"
}

// textureDefs defines the patterns the legend's items use, in a fixed
// order. Marks are half transparent, so the colour underneath stays the
// colour of the severity or series.
func (c *canvas) textureDefs(items []legendItem) {
	need := map[string]bool{}
	for _, it := range items {
		if it.texture != Solid {
			need[textureID(it.texture, inkOn(it.color))] = true
		}
	}
	if len(need) == 0 {
		return
	}
	c.raw("<defs>\n")
	for _, t := range Textures {
		for _, ink := range []string{"#000000", "#ffffff"} {
			id := textureID(t, ink)
			if !need[id] {
				continue
			}
			c.raw(`<pattern id="`, id, `" width="6" height="6" patternUnits="userSpaceOnUse"`)
			switch t {
			case Stripes:
				c.raw(` patternTransform="rotate(45)"><rect width="2" height="6" fill="`, ink, `" fill-opacity="0.45"/>`)
			case Dots:
				c.raw(`><circle cx="3" cy="3" r="1.4" fill="`, ink, `" fill-opacity="0.55"/>`)
			case Grid:
				c.raw(` patternTransform="rotate(45)"><path d="M0 3H6M3 0V6" stroke="`, ink, `" stroke-width="1.2" stroke-opacity="0.45"/>`)
			}
			c.raw("</pattern>\n")
		}
	}
	c.raw("</defs>\n")
}
