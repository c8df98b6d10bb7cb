package cmd

import (
	"bytes"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"idemlab/experiments/durability"
)

// cellRE finds a heat map cell as the browser holds it: a <rect> whose
// tooltip is "row × column: outcome".
var cellRE = regexp.MustCompile(`<rect ([^>]*)><title>([^<]*) × ([^<]*): ([^<]*)</title></rect>`)

var fillRE = regexp.MustCompile(`\bfill="(#[0-9a-fA-F]{3,6})"`)

// TestDurabilityHeatMapInBrowser runs a small durability matrix with real
// processes, renders its report in headless Chromium and reads the heat
// map's cells back from the DOM: every severity has one colour, different
// severities have different colours, no loss is green, and no label is
// cut.
func TestDurabilityHeatMapInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	// DELETE with NORMAL rolls back the last commit even after an ACK, so
	// this slice has every class from "nothing lost" to "duplicate".
	r := execIn(t, Hooks{TempDir: dir}, "experiment", "--scenario", "durability", "--input", "../input.json",
		"--pattern", "redelivery-separate,claim-ttl", "--journal-mode", "DELETE", "--synchronous", "NORMAL,EXTRA", "--kind", "power", "--out", out)
	if r.code != 0 {
		t.Fatalf("experiment: exit %d\n%s", r.code, r.stderr)
	}
	page := filepath.Join(dir, "report.html")
	if r := execIn(t, Hooks{}, "report", out, "--html", page); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	i := strings.Index(dom, `id="chart-durability-power"`)
	if i < 0 {
		t.Fatal("the page has no power-cut heat map")
	}
	chart := dom[i:]
	chart = chart[:strings.Index(chart, "</figure>")]

	fills := map[durability.Severity]map[string]bool{}
	cells := 0
	for _, m := range cellRE.FindAllStringSubmatch(chart, -1) {
		f := fillRE.FindStringSubmatch(m[1])
		if f == nil {
			continue // a cell with no result is an outline
		}
		sev := durability.SeverityOf(html.UnescapeString(m[4]))
		if fills[sev] == nil {
			fills[sev] = map[string]bool{}
		}
		fills[sev][strings.ToLower(f[1])] = true
		cells++
	}
	if cells == 0 {
		t.Fatal("no filled cells in the heat map")
	}
	if len(fills) < 3 {
		t.Errorf("the slice shows %d severities, want at least 3 to compare: %v", len(fills), fills)
	}
	owner := map[string]durability.Severity{}
	for sev, fs := range fills {
		if len(fs) != 1 {
			t.Errorf("severity %d is drawn in %d colours %v, want one", sev, len(fs), fs)
		}
		for f := range fs {
			if other, ok := owner[f]; ok {
				t.Errorf("severities %d and %d share the colour %s", other, sev, f)
			}
			owner[f] = sev
		}
	}
	if sev, ok := owner["#009e73"]; ok && sev != durability.SeverityNone {
		t.Errorf("green is used for severity %d, not only for nothing lost", sev)
	}
	if strings.Contains(chart, "…") {
		t.Error("a label in the heat map is cut with an ellipsis")
	}
	if !strings.Contains(chart, "<figcaption>") || strings.Contains(chart, "Green: nothing lost; blue") {
		t.Error("the heat map has no caption, or the old one")
	}
}

// TestJapaneseTitlesInBrowser renders the report's article titles, in the
// report's own style, twice: as they are, and with every CJK character
// shifted to its neighbour. Drawn from a CJK font the two screenshots
// differ; drawn as the boxes of a missing glyph they are the same. Needs a
// CJK font: .ci/run installs fonts-noto-cjk.
func TestJapaneseTitlesInBrowser(t *testing.T) {
	bin := chromium(t)
	if out, err := exec.Command("fc-list", ":lang=ja").Output(); err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Skip("no Japanese font installed (apt-get install -y fonts-noto-cjk); .ci/run installs it")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if r := execIn(t, Hooks{}, "report", filepath.Join("..", "testdata", "golden", "small"), "--html", page); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(page)
	doc := string(b)
	style := regexp.MustCompile(`(?s)<style>.*?</style>`).FindString(doc)
	var titles []string
	for _, m := range regexp.MustCompile(`<h3>([^<]*)</h3>`).FindAllStringSubmatch(doc, -1) {
		if hasCJK(m[1]) {
			titles = append(titles, m[1])
		}
	}
	if style == "" || len(titles) == 0 {
		t.Fatalf("the report has no <style> (%d bytes) or no title with Japanese text", len(style))
	}
	shot := func(name, body string) []byte {
		p := filepath.Join(dir, name+".html")
		if err := os.WriteFile(p, []byte("<!doctype html><meta charset=\"utf-8\">"+style+body), 0o644); err != nil {
			t.Fatal(err)
		}
		png := filepath.Join(dir, name+".png")
		headless(t, bin, "--screenshot="+png, "--window-size=1100,400", "file://"+p)
		img, err := os.ReadFile(png)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	body := "<h3>" + strings.Join(titles, "</h3><h3>") + "</h3>"
	shifted := strings.Map(func(r rune) rune {
		if isCJK(r) {
			return r + 1
		}
		return r
	}, body)
	if bytes.Equal(shot("as-is", body), shot("shifted", shifted)) {
		t.Errorf("the Japanese titles draw the same as other CJK characters: boxes, not glyphs (%q)", titles)
	}
}

func isCJK(r rune) bool {
	return (r >= 0x3040 && r <= 0x30ff) || (r >= 0x4e00 && r <= 0x9fff)
}

func hasCJK(s string) bool { return strings.IndexFunc(s, isCJK) >= 0 }
