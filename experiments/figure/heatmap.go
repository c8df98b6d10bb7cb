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
	var items []legendItem
	for _, o := range h.Outcomes {
		if used[o.Name] {
			items = append(items, legendItem{o.Name, colors[o.Name], swatchBox})
		}
	}

	var cv canvas
	top := header(&cv, h.Title, items) + 8
	rowW := textWidth(h.RowLabel, labelSize)
	for _, r := range h.Rows {
		rowW = max(rowW, textWidth(r, tickSize))
	}
	left := 12 + min(rowW, maxRowLabel) + 10
	right := width - 12
	cw := (right - left) / float64(len(h.Cols))

	// Column headers wrap above their column; the axis name sits over
	// the row labels, where it does not compete with them.
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
	if h.RowLabel != "" {
		l, cut := fit(h.RowLabel, left-20, labelSize)
		cv.text(12, gridTop-9, labelSize, "start", inkColor, "600", l, tipIf(cut, h.RowLabel))
	}

	for r, row := range h.Rows {
		y := gridTop + cellHeight*float64(r)
		l, cut := fit(row, left-20, tickSize)
		cv.text(left-8, y+cellHeight/2+4, tickSize, "end", inkColor, "", l, tipIf(cut, row))
		for c, v := range h.Cells[r] {
			x := left + cw*float64(c)
			if v == "" {
				// No result: an outline keeps the grid readable without
				// inventing an outcome.
				cv.raw(`<rect x="`, num(x+1.5), `" y="`, num(y+1.5), `" width="`, num(cw-3), `" height="`, num(cellHeight-3), `" fill="none" stroke="`, gridColor, `" stroke-dasharray="3 3"><title>`, escape(row+" × "+h.Cols[c]+": no result"), "</title></rect>\n")
				continue
			}
			cv.rect(x+1, y+1, cw-2, cellHeight-2, colors[v], row+" × "+h.Cols[c]+": "+v)
			name, _ := fit(v, cw-8, valueSize+1)
			lum, _ := luminance(colors[v])
			ink := "#ffffff"
			if lum > 0.45 {
				ink = "#000000"
			}
			// The cell's own <title> already holds the full text; the label
			// ignores the pointer so hovering it shows that tooltip.
			cv.raw(`<text x="`, num(x+cw/2), `" y="`, num(y+cellHeight/2+4), `" font-size="`, num(valueSize+1), `" text-anchor="middle" fill="`, ink, `" pointer-events="none">`, escape(name), "</text>\n")
		}
	}
	height := gridTop + cellHeight*float64(len(h.Rows)) + 12
	return document(height, title(h.Title, "Heat map"), h.describe(), &cv), nil
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
