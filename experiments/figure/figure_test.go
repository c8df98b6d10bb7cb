package figure

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.svg from the current output")

var nan = math.NaN()

// goldenCharts are the report's kinds of chart with the data that used to
// draw badly: whole-number counts, zeros, missing values, long labels.
var goldenCharts = []struct {
	name string
	fig  Figure
}{
	{"bar-counts", BarChart{
		Title:      "Follow-up jobs per event",
		XLabel:     "pattern / condition",
		YLabel:     "jobs",
		Categories: []string{"separate-commit / normal", "separate-commit / crash after-job-commit", "single-transaction / normal", "single-transaction / crash before-commit"},
		Series: []Series{
			{Name: "observed", Values: []float64{1, 2, 1, 0}, Expected: []float64{1, 2, 1, 0}},
		},
		ExpectedName: "expected (oracle)",
	}},
	{"bar-grouped-missing", BarChart{
		Title:      "Claims won per worker",
		YLabel:     "claims",
		Categories: []string{"ttl-upsert", "check-then-insert", "no-claim"},
		Series: []Series{
			{Name: "2 workers", Values: []float64{1, 2, 0}, Expected: []float64{1, 1, 1}},
			{Name: "4 workers", Values: []float64{1, nan, 3}, Expected: []float64{1, nan, 1}},
			{Name: "8 workers (not run)", Values: []float64{nan, nan, nan}},
		},
	}},
	{"bar-many-categories", BarChart{
		Title:        "claim winners per race (the most seen in any repetition)",
		YLabel:       "winners",
		ExpectedName: "expected (oracle)",
		Categories: []string{"1-fresh-claim/legacy", "1-fresh-claim/ttl", "2-within-ttl/legacy", "2-within-ttl/ttl", "3-after-ttl/legacy", "3-after-ttl/ttl",
			"4-null-claimed-at/ttl", "5-at-boundary/ttl", "5-past-boundary/ttl", "6-forged-timestamp/legacy", "6-forged-timestamp/ttl", "7-old-schema/legacy"},
		Series: []Series{
			{Name: "observed winners, race A", Values: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Expected: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
			{Name: "observed winners, race B", Values: []float64{0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0}, Expected: []float64{0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0}},
		},
	}},
	{"bar-decimals", BarChart{
		Title:      "Commit time",
		YLabel:     "ms",
		Categories: []string{"DELETE + FULL", "WAL + NORMAL", "WAL + OFF", "a category label that is far too long to fit under its group even on three lines of text"},
		Series:     []Series{{Name: "median", Values: []float64{1.57, 0.42, 0.05, 0.31}}},
	}},
	{"line-timings", LineChart{
		Title:  "Milliseconds per trial",
		XLabel: "trial",
		YLabel: "ms",
		Series: []XYSeries{
			{Name: "separate-commit", X: []float64{1, 2, 3, 4, 5, 6}, Y: []float64{21.2, 19.8, 20.4, nan, 22.9, 20.1}},
			{Name: "single-transaction", X: []float64{1, 2, 3, 4, 5, 6}, Y: []float64{18.4, 18.9, 17.7, 18.2, 19.5, 18.0}},
			{Name: "empty", X: []float64{1}, Y: []float64{nan}},
		},
		References: []Reference{{Name: "simulated floor", Y: 15}},
	}},
	{"line-floors-per-series", LineChart{
		Title:  "batch resume time per trial vs simulated floor",
		XLabel: "trial",
		YLabel: "ms",
		Series: []XYSeries{
			{Name: "rerun-all (measured)", X: []float64{1, 2, 3}, Y: []float64{412, 398, 405}},
			{Name: "journal (measured)", X: []float64{1, 2, 3}, Y: []float64{121, 118, 130}},
		},
		References: []Reference{
			{Name: "rerun-all floor (simulated latency)", Y: 400, Series: "rerun-all (measured)"},
			{Name: "journal floor (simulated latency)", Y: 100, Series: "journal (measured)"},
		},
	}},
	{"heatmap-crash", HeatMap{
		Title:    "Crash exploration",
		RowLabel: "pattern",
		ColLabel: "crash point",
		Rows:     []string{"separate-commit", "single-transaction"},
		Cols:     []string{"after-job-insert", "after-job-commit", "after-processed-commit", "after-processed-insert", "before-commit", "after-commit"},
		Outcomes: []Outcome{{Name: "exactly once", Color: "#009E73"}, {Name: "duplicate job", Color: "#D55E00"}, {Name: "lost job", Color: "#CC79A7"}, {Name: "never happens"}},
		Cells: [][]string{
			{"exactly once", "duplicate job", "exactly once", "", "", ""},
			{"", "", "", "exactly once", "exactly once", "exactly once"},
		},
	}},
	{"heatmap-durability", HeatMap{
		Title:    "Durability after a power cut",
		RowLabel: "pattern / crash point",
		ColLabel: "journal_mode, synchronous",
		Rows:     []string{"redelivery-separate/after-processed-commit", "claim-ttl/followed-up", "batch-journal/after-send-accepted:item-001"},
		Cols:     []string{"DELETE NORMAL", "DELETE FULL", "WAL NORMAL", "WAL OFF (unsafe, for comparison only)"},
		Outcomes: []Outcome{
			{Name: "ok", Color: "#009E73"},
			{Name: "rolled-back", Label: "r", Color: "#56B4E9"},
			{Name: "lost-acked", Label: "L", Color: "#E69F00"},
			{Name: "rolled-back+lost-downstream", Label: "rF", Color: "#E69F00", Texture: Stripes},
			{Name: "lost-acked+lost-downstream", Label: "LF", Color: "#E69F00", Texture: Dots},
			{Name: "corrupt+lost-acked", Label: "CL", Color: "#000000", Texture: Grid},
			{Name: "never happens", Label: "N", Color: "#D55E00"},
		},
		Cells: [][]string{
			{"lost-acked", "lost-acked", "ok", "corrupt+lost-acked"},
			{"rolled-back+lost-downstream", "lost-acked+lost-downstream", "rolled-back", ""},
			{"ok", "ok", "rolled-back", "rolled-back"},
		},
	}},
	{"escaping", BarChart{
		Title:      `<script>alert("x")</script> & 'quotes'`,
		YLabel:     "a < b",
		Categories: []string{"<tag>", "a & b", "\"quoted\"\nnewline"},
		Series:     []Series{{Name: "</svg>", Values: []float64{1, 0, 2}}},
	}},
}

func TestGolden(t *testing.T) {
	for _, tt := range goldenCharts {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fig.SVG()
			if err != nil {
				t.Fatal(err)
			}
			wellFormed(t, got)
			path := filepath.Join("testdata", tt.name+".svg")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s differs (-want +got), rerun with -update if intended:\n%s", path, diff)
			}
			again, _ := tt.fig.SVG()
			if !bytes.Equal(got, again) {
				t.Error("two renderings of the same chart differ")
			}
		})
	}
}

// wellFormed fails unless svg parses as XML with an <svg> root whose first
// children are <title> and <desc>, and which is sized to its container.
func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var names []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && len(names) < 3 {
			names = append(names, se.Name.Local)
		}
	}
	if diff := cmp.Diff([]string{"svg", "title", "desc"}, names); diff != "" {
		t.Errorf("first elements (-want +got):\n%s", diff)
	}
	if !bytes.Contains(svg, []byte(`width="100%"`)) || !bytes.Contains(svg, []byte(`viewBox="0 0 720 `)) {
		t.Error("svg is not responsive: want a viewBox and width=100%")
	}
	if bytes.Contains(svg, []byte(`\u003c`)) || bytes.Contains(svg, []byte("serif\"")) && !bytes.Contains(svg, []byte("sans-serif")) {
		t.Error("svg has JSON-escaped text or a serif font")
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		name    string
		lo, hi  float64
		integer bool
		want    []string
	}{
		{"counts 0..2", 0, 2, true, []string{"0", "1", "2"}},
		{"counts 0..1", 0, 1, true, []string{"0", "1"}},
		{"all zero counts", 0, 0, true, []string{"0", "1"}},
		{"counts 0..7 step 2", 0, 7, true, []string{"0", "2", "4", "6", "8"}},
		{"counts 0..500 step 100", 0, 500, true, []string{"0", "100", "200", "300", "400", "500"}},
		{"counts 0..23 step 5", 0, 23, true, []string{"0", "5", "10", "15", "20", "25"}},
		{"ms 0..23.4", 0, 23.4, false, []string{"0", "5", "10", "15", "20", "25"}},
		{"ms 0..1.57", 0, 1.57, false, []string{"0.0", "0.5", "1.0", "1.5", "2.0"}},
		{"ms 0..0.37", 0, 0.37, false, []string{"0.0", "0.1", "0.2", "0.3", "0.4"}},
		{"fractions 0..0.9 are not integers", 0, 0.9, false, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{"negative to positive", -3, 4, true, []string{"-4", "-2", "0", "2", "4"}},
		{"offset range", 17.2, 18.9, false, []string{"17.0", "17.5", "18.0", "18.5", "19.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ax := niceAxis(tt.lo, tt.hi, tt.integer)
			var got []string
			for _, v := range ax.ticks {
				got = append(got, ax.format(v))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ticks (-want +got):\n%s", diff)
			}
			if ax.min > tt.lo || ax.max < tt.hi {
				t.Errorf("axis %v..%v does not cover %v..%v", ax.min, ax.max, tt.lo, tt.hi)
			}
		})
	}
}

// bars lists the <rect> elements with a tooltip: the data bars.
var barRE = regexp.MustCompile(`<rect [^>]*height="([^"]+)"[^>]*><title>([^<]*)</title>`)

func TestBarsZeroAndMissing(t *testing.T) {
	tests := []struct {
		name       string
		series     []Series
		wantBars   []string // tooltips, in drawing order
		wantLegend []string
	}{
		{"zero is a visible bar", []Series{{Name: "s", Values: []float64{0, 2}}},
			[]string{"a, s: 0", "b, s: 2"}, []string{"s"}},
		{"missing draws nothing", []Series{{Name: "s", Values: []float64{nan, 2}}},
			[]string{"b, s: 2"}, []string{"s"}},
		{"empty series is no phantom", []Series{{Name: "s", Values: []float64{1, 2}}, {Name: "ghost", Values: []float64{nan, nan}}},
			[]string{"a, s: 1", "b, s: 2"}, []string{"s"}},
		{"expected alone adds a legend entry", []Series{{Name: "s", Values: []float64{1, nan}, Expected: []float64{nan, 1}}},
			[]string{"a, s: 1"}, []string{"s", "expected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := BarChart{Title: "t", Categories: []string{"a", "b"}, Series: tt.series}
			svg, err := c.SVG()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range barRE.FindAllStringSubmatch(string(svg), -1) {
				got = append(got, m[2])
				if h := m[1]; h == "0" {
					t.Errorf("bar %q has zero height", m[2])
				}
			}
			if diff := cmp.Diff(tt.wantBars, got); diff != "" {
				t.Errorf("bars (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLegend, legendNames(c.legendItems())); diff != "" {
				t.Errorf("legend (-want +got):\n%s", diff)
			}
			if tt.name == "zero is a visible bar" && !strings.Contains(string(svg), `fill="#555555">0</text>`) {
				t.Error("zero bar has no value label 0")
			}
		})
	}
}

func legendNames(items []legendItem) []string {
	var names []string
	for _, it := range items {
		names = append(names, it.name)
	}
	return names
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`<a href="x">&'`, "&lt;a href=&quot;x&quot;&gt;&amp;&apos;"},
		{"line\nbreak\ttab", "line break tab"},
		{"nul\x00bell\x07", "nul\uFFFDbell\uFFFD"},
		{"bad utf8 \xff", "bad utf8 \uFFFD"},
		{"é × →", "é × →"},
	}
	for _, tt := range tests {
		if got := escape(tt.in); got != tt.want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		label    string
		maxWidth float64
		lines    int
		want     []string
		cut      bool
	}{
		{"short", 100, 3, []string{"short"}, false},
		{"separate-commit / crash after-job-commit", 90, 3, []string{"separate-", "commit / crash", "after-job…"}, true},
		{"after-processed-commit", 90, 3, []string{"after-", "processed-", "commit"}, false},
		{"abcdefghijklmnopqrstuvwxyz", 40, 2, []string{"abcdef", "ghijk…"}, true},
	}
	for _, tt := range tests {
		got, cut := wrap(tt.label, tt.maxWidth, tickSize, tt.lines)
		if diff := cmp.Diff(tt.want, got); diff != "" || cut != tt.cut {
			t.Errorf("wrap(%q) cut=%v, want %v; lines (-want +got):\n%s", tt.label, cut, tt.cut, diff)
		}
	}
}

func TestInvalidCharts(t *testing.T) {
	tests := []struct {
		name string
		fig  Figure
		want string
	}{
		{"bar values per category", BarChart{Categories: []string{"a", "b"}, Series: []Series{{Name: "s", Values: []float64{1}}}}, "1 values for 2 categories"},
		{"bar expected per category", BarChart{Categories: []string{"a"}, Series: []Series{{Name: "s", Values: []float64{1}, Expected: []float64{1, 2}}}}, "2 expected values"},
		{"bar infinity", BarChart{Categories: []string{"a"}, Series: []Series{{Name: "s", Values: []float64{math.Inf(1)}}}}, "infinite"},
		{"bar no categories", BarChart{}, "no categories"},
		{"line x and y", LineChart{Series: []XYSeries{{Name: "s", X: []float64{1, 2}, Y: []float64{1}}}}, "2 x and 1 y"},
		{"line reference NaN", LineChart{References: []Reference{{Name: "r", Y: nan}}}, "no finite value"},
		{"line reference of unknown series", LineChart{References: []Reference{{Name: "r", Y: 1, Series: "ghost"}}}, "not in the chart"},
		{"heat map unknown outcome", HeatMap{Rows: []string{"r"}, Cols: []string{"c"}, Outcomes: []Outcome{{Name: "ok"}}, Cells: [][]string{{"boom"}}}, "not a listed outcome"},
		{"heat map bad colour", HeatMap{Rows: []string{"r"}, Cols: []string{"c"}, Outcomes: []Outcome{{Name: "ok", Color: "red\"/>"}}, Cells: [][]string{{"ok"}}}, "not #rgb"},
		{"heat map ragged", HeatMap{Rows: []string{"r"}, Cols: []string{"c", "d"}, Cells: [][]string{{""}}}, "1 cells for 2 columns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.fig.SVG()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SVG() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// goldenHeatMap returns a golden heat map by name, and its SVG.
func goldenHeatMap(t *testing.T, name string) (HeatMap, []byte) {
	t.Helper()
	for _, g := range goldenCharts {
		if h, ok := g.fig.(HeatMap); ok && g.name == name {
			svg, err := h.SVG()
			if err != nil {
				t.Fatal(err)
			}
			return h, svg
		}
	}
	t.Fatalf("no golden heat map %q", name)
	return HeatMap{}, nil
}

func TestHeatMapLegendListsOnlyUsedOutcomes(t *testing.T) {
	_, svg := goldenHeatMap(t, "heatmap-crash")
	if strings.Contains(string(svg), "never happens") {
		t.Error("legend lists an outcome that no cell has")
	}
	if got := strings.Count(string(svg), ": no result</title>"); got != 6 {
		t.Errorf("%d empty cells outlined, want 6", got)
	}
}

// TestHeatMapLabelsReadable checks that long row labels wrap whole, that
// cells show their short labels, that the legend keys each label to its
// outcome, and that a textured outcome's pattern is defined.
func TestHeatMapLabelsReadable(t *testing.T) {
	h, svg := goldenHeatMap(t, "heatmap-durability")
	s := string(svg)
	if strings.Contains(s, "…") {
		t.Error("a label is cut with an ellipsis")
	}
	texts := strings.Join(textsOf(s), " ")
	for _, row := range h.Rows {
		lines, _ := wrap(row, 1e9, tickSize, 1)
		for _, part := range strings.FieldsFunc(lines[0], func(r rune) bool { return r == '/' || r == '-' || r == ' ' }) {
			if !strings.Contains(texts, part) {
				t.Errorf("row label %q: %q is not drawn", row, part)
			}
		}
	}
	for _, want := range []string{">rF<", ">LF<", ">CL<", "rF: rolled-back+lost-downstream", "LF: lost-acked+lost-downstream", `<pattern id="idemlab-stripes-dark"`, `<pattern id="idemlab-dots-dark"`, `<pattern id="idemlab-grid-light"`, `fill="url(#idemlab-grid-light)"`} {
		if !strings.Contains(s, want) {
			t.Errorf("heat map lacks %q", want)
		}
	}
	if strings.Contains(s, "N: never happens") {
		t.Error("legend lists an outcome no cell has")
	}
}

var textRE = regexp.MustCompile(`<text [^>]*>(?:<title>[^<]*</title>)?([^<]*)</text>`)

// textsOf lists the visible text of every <text> element.
func textsOf(svg string) []string {
	var out []string
	for _, m := range textRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, m[1])
	}
	return out
}
