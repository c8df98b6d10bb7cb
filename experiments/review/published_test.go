package review

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/scenario"
)

// TestPublishedNamesNoAddress: the articles have no public address, so a
// published table names none, not even an empty one, and the report links
// to nothing.
func TestPublishedNamesNoAddress(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "*", "published.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no published tables found: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, k := range []string{"url", "link", "href"} {
			if _, ok := m[k]; ok {
				t.Errorf("%s has a %q field", f, k)
			}
		}
		if s, _ := m["title_original"].(string); s == "" {
			t.Errorf("%s has no original title, which is how the report names the article", f)
		}
	}
	r := &Report{Folder: "f", Verdict: "PASS", Articles: []ArticleSection{{Scenario: "s", Article: scenario.Article{ID: "000", Title: "A title (原題)"}}}}
	var html, md bytes.Buffer
	if err := RenderHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if err := RenderMarkdown(&md, r, func(scenario.Chart) string { return "" }); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"html": html.String(), "markdown": md.String()} {
		if strings.Contains(out, "href") || strings.Contains(out, "](") || strings.Contains(out, "Original") {
			t.Errorf("%s report links the article:\n%s", name, out)
		}
	}
}

// TestFontStackNamesCJKFonts: the page's font stack names the common
// Japanese fonts before the generic family, so an original title is drawn
// from one of them where the UI font has no Han or kana.
func TestFontStackNamesCJKFonts(t *testing.T) {
	var b bytes.Buffer
	if err := RenderHTML(&b, &Report{Folder: "f", Verdict: "PASS"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i := strings.Index(page, "body { font-family: ")
	if i < 0 {
		t.Fatal("the page sets no body font")
	}
	rule := page[i : i+strings.Index(page[i:], ";")]
	last := -1
	for _, f := range []string{`"Noto Sans CJK JP"`, `"Noto Sans JP"`, `"Hiragino Sans"`, `"Yu Gothic"`, `Meiryo`, `"Source Han Sans"`, `sans-serif`} {
		at := strings.Index(rule, f)
		if at < 0 {
			t.Errorf("body font stack lacks %s: %s", f, rule)
			continue
		}
		if at < last {
			t.Errorf("%s comes before a Japanese font: %s", f, rule)
		}
		last = at
	}
	if strings.Contains(rule, "ZgotmplZ") || strings.Contains(rule, "&#34;") {
		t.Errorf("the font stack was escaped: %s", rule)
	}
}
