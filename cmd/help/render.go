package help

import (
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// Width is the width to render for on w: the terminal's when w is one,
// else $COLUMNS, else 80; never under 40 nor over 100, past which lines
// are hard to read.
func Width(w io.Writer) int {
	n := 0
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		n, _, _ = term.GetSize(int(f.Fd()))
	}
	if n <= 0 {
		n, _ = strconv.Atoi(os.Getenv("COLUMNS"))
	}
	if n <= 0 {
		n = 80
	}
	return min(max(n, 40), 100)
}

// Terminal renders Markdown as plain text for a terminal width columns
// wide: headings stand alone (the title's name in capitals), paragraphs and list
// items are wrapped, code blocks are indented and kept as they are, and a
// table is drawn in columns when it fits, else as one block per row.
// Inline marks (backticks, emphasis, links' targets within the page) are
// dropped.
func Terminal(md string, width int) string {
	var out []string
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	blank := func() {
		if len(out) > 0 && out[len(out)-1] != "" {
			out = append(out, "")
		}
	}
	for i := 0; i < len(lines); {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			i++
		case strings.HasPrefix(trimmed, "<!--"):
			for i < len(lines) && !strings.Contains(lines[i], "-->") {
				i++
			}
			i++
		case strings.HasPrefix(trimmed, "```"):
			indent := len(line) - len(strings.TrimLeft(line, " "))
			blank()
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code := lines[i]
				if len(code)-len(strings.TrimLeft(code, " ")) >= indent {
					code = code[indent:]
				}
				out = append(out, strings.TrimRight("  "+code, " "))
			}
			i++
			out = append(out, "")
		case strings.HasPrefix(trimmed, "#"):
			blank()
			out = append(out, heading(trimmed, width)...)
			out = append(out, "")
			i++
		case strings.HasPrefix(trimmed, "|"):
			var rows []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, strings.TrimSpace(lines[i]))
			}
			blank()
			out = append(out, table(rows, width)...)
			out = append(out, "")
		case listItem().MatchString(line):
			blank()
			var items []string
			items, i = listBlock(lines, i, width)
			out = append(out, items...)
			out = append(out, "")
		default:
			var text []string
			quote := strings.HasPrefix(trimmed, ">")
			for ; i < len(lines); i++ {
				nt := strings.TrimSpace(lines[i])
				if nt == "" || strings.HasPrefix(nt, "```") || strings.HasPrefix(nt, "|") || strings.HasPrefix(nt, "#") || listItem().MatchString(lines[i]) {
					break
				}
				text = append(text, strings.TrimSpace(strings.TrimPrefix(nt, ">")))
			}
			blank()
			prefix := ""
			if quote {
				prefix = "  | "
			}
			out = append(out, Wrap(Plain(strings.Join(text, " ")), width, prefix, prefix)...)
			out = append(out, "")
		}
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n") + "\n"
}

// heading renders a Markdown heading line: the title's (level 1) name in
// capitals, as a man page's, wrapped.
func heading(trimmed string, width int) []string {
	level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
	text := Plain(strings.TrimSpace(trimmed[level:]))
	if level == 1 {
		name, rest, ok := strings.Cut(text, ":")
		if !ok {
			name, rest = text, ""
		} else {
			rest = ":" + rest
		}
		text = strings.ToUpper(name) + rest
	}
	return Wrap(text, width, "", "")
}

// listBlock renders the list that starts at lines[i], each item wrapped
// under its marker, and returns the index of the line after it.
func listBlock(lines []string, i, width int) ([]string, int) {
	var out []string
	for i < len(lines) && listItem().MatchString(lines[i]) {
		m := listItem().FindStringSubmatch(lines[i])
		depth := len(m[1])
		marker := m[2]
		text := []string{m[3]}
		for i++; i < len(lines); i++ {
			next := lines[i]
			nt := strings.TrimSpace(next)
			if nt == "" || listItem().MatchString(next) || strings.HasPrefix(nt, "```") || strings.HasPrefix(nt, "|") || strings.HasPrefix(nt, "#") {
				break
			}
			text = append(text, nt)
		}
		lead := strings.Repeat(" ", depth)
		if marker == "-" || marker == "*" {
			marker = "-"
		}
		out = append(out, Wrap(Plain(strings.Join(text, " ")), width, lead+"  "+marker+" ", lead+strings.Repeat(" ", utf8.RuneCountInString(marker)+3))...)
		// A code block or a paragraph inside the item, indented under
		// it, belongs to it.
		if i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
			break
		}
		if i+1 < len(lines) && strings.TrimSpace(lines[i]) == "" && listItem().MatchString(lines[i+1]) {
			i++
		}
	}
	return out, i
}

// The patterns are compiled on first use, not at every worker's start
// (each idemlab worker is this binary).
var (
	listItem  = lazyRegexp(`^( *)([-*]|[0-9]+\.) (.*)$`)
	link      = lazyRegexp(`\[([^\]]+)\]\(([^)]+)\)`)
	strong    = lazyRegexp(`\*\*(.+?)\*\*`)
	emphasis  = lazyRegexp(`(^|[\s(])\*([^*\s][^*]*)\*`)
	separator = lazyRegexp(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Plain drops a line's inline Markdown: code spans keep their text,
// emphasis its words, a link its text (and its address when it leaves the
// page), and "\|" is "|".
func Plain(s string) string {
	s = strong().ReplaceAllString(s, "$1")
	parts := strings.Split(s, "`")
	for i := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			continue // inside a code span
		}
		p := parts[i]
		p = link().ReplaceAllStringFunc(p, func(m string) string {
			sm := link().FindStringSubmatch(m)
			if strings.HasPrefix(sm[2], "#") {
				return sm[1]
			}
			return sm[1] + " (" + sm[2] + ")"
		})
		p = emphasis().ReplaceAllString(p, "$1$2")
		parts[i] = p
	}
	if len(parts)%2 == 0 {
		// An unmatched backtick is text.
		last := len(parts) - 1
		parts[last-1] += "`" + parts[last]
		parts = parts[:last]
	}
	return strings.ReplaceAll(strings.Join(parts, ""), `\|`, "|")
}

// Wrap breaks text into lines of at most width runes (a word longer than
// that stands alone), the first led by first and the rest by rest.
func Wrap(text string, width int, first, rest string) []string {
	var lines []string
	cur, n := first, utf8.RuneCountInString(first)
	empty := true
	for _, w := range strings.Fields(text) {
		wl := utf8.RuneCountInString(w)
		if !empty && n+1+wl > width {
			lines = append(lines, cur)
			cur, n, empty = rest, utf8.RuneCountInString(rest), true
		}
		if !empty {
			cur += " "
			n++
		}
		cur += w
		n += wl
		empty = false
	}
	return append(lines, cur)
}

// cells splits a table row into its cells; "\|" is a bar inside a cell.
func cells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var out []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// table draws a Markdown table: in columns when every row fits width,
// else each row as a block, its first cell a line and every other cell
// under it led by its column's header.
func table(rows []string, width int) []string {
	var head []string
	var body [][]string
	for i, r := range rows {
		if i == 1 && separator().MatchString(r) {
			continue
		}
		c := cells(r)
		for j := range c {
			c[j] = Plain(c[j])
		}
		if i == 0 {
			head = c
			continue
		}
		body = append(body, c)
	}
	widths := make([]int, len(head))
	for _, r := range append([][]string{head}, body...) {
		for j, c := range r {
			if j < len(widths) {
				widths[j] = max(widths[j], utf8.RuneCountInString(c))
			}
		}
	}
	total := 0
	for _, w := range widths {
		total += w + 2
	}
	var out []string
	if total <= width {
		for ri, r := range append([][]string{head}, body...) {
			var b strings.Builder
			b.WriteString("  ")
			for j := range widths {
				c := ""
				if j < len(r) {
					c = r[j]
				}
				b.WriteString(c)
				if j < len(widths)-1 {
					b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)+2))
				}
			}
			out = append(out, strings.TrimRight(b.String(), " "))
			if ri == 0 {
				var u strings.Builder
				u.WriteString("  ")
				for j, w := range widths {
					u.WriteString(strings.Repeat("-", max(w, 1)))
					if j < len(widths)-1 {
						u.WriteString("  ")
					}
				}
				out = append(out, u.String())
			}
		}
		return out
	}
	if len(head) == 2 && widths[0] <= max(12, width/3) {
		// A narrow key beside its text: the key hangs, as in --help.
		for _, r := range body {
			key := r[0] + strings.Repeat(" ", widths[0]-utf8.RuneCountInString(r[0])+2)
			out = append(out, Wrap(firstOr(r, 1), width, "  "+key, strings.Repeat(" ", widths[0]+4))...)
		}
		return out
	}
	for ri, r := range body {
		if ri > 0 {
			out = append(out, "")
		}
		for j, c := range r {
			if j == 0 {
				out = append(out, Wrap(c, width, "  ", "    ")...)
				continue
			}
			if c == "" {
				continue
			}
			// With one column beside the first, its header adds
			// nothing; with more, it says which cell is which.
			if h := firstOr(head, j); h != "" && len(head) > 2 {
				c = h + ": " + c
			}
			out = append(out, Wrap(c, width, "    ", "      ")...)
		}
	}
	return out
}

func firstOr(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}
