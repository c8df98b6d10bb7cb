package cmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's headless browser; the test skips without it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install -y chromium); .ci/run installs it")
	return ""
}

// headless runs chromium with no profile, no network helpers and no
// sandbox (CI runs as root), and returns its stdout.
func headless(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

// TestReportInBrowser renders the small golden folder's report in headless
// Chromium and checks what a reviewer sees: the verdict badge, every chart,
// integer axes on the count charts, the article tables and no findings. A
// tampered copy must show DOES NOT VERIFY and no PASS badge.
// IDEMLAB_SCREENSHOT=FILE keeps a screenshot of the page.
func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	golden := filepath.Join("..", "testdata", "golden", "small")
	if r := execIn(t, Hooks{}, "report", golden, "--html", page); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html, _ := os.ReadFile(page)
	for _, banned := range []string{"http://", "https://", "<script", "<link", "src=", `\u003c`} {
		if bytes.Contains(bytes.ReplaceAll(html, []byte("http://www.w3.org/"), nil), []byte(banned)) {
			t.Errorf("page contains %q; it must be self-contained and unescaped", banned)
		}
	}
	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	for _, want := range []string{
		`<span class="verdict pass">PASS</span>`, `id="article-000"`, `id="article-002"`, `id="article-003"`,
		`id="chart-redelivery-jobs"`, `id="chart-batch-duplicates"`, `id="chart-batch-timings-before_accept"`, `id="chart-claim-winners"`,
		"Every figure and verdict derives from the folder", `<table class="settings">`, "system-ui",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	for _, bad := range []string{"DOES NOT VERIFY", ">0.00<", ">2.50<", ">0.6<"} {
		if strings.Contains(dom, bad) {
			t.Errorf("rendered page shows %q", bad)
		}
	}
	if n := strings.Count(dom, "<svg"); n < 5 {
		t.Errorf("rendered page has %d inline SVGs, want at least 5", n)
	}
	shot := filepath.Join(dir, "report.png")
	headless(t, bin, "--screenshot="+shot, "--window-size=1280,4000", "file://"+page)
	if st, err := os.Stat(shot); err != nil || st.Size() < 20000 {
		t.Fatalf("screenshot %s missing or nearly empty: %v", shot, err)
	}
	if dst := os.Getenv("IDEMLAB_SCREENSHOT"); dst != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(dst, b, 0o644)
	}

	bad := copyFolder(t, golden)
	editJSON(t, filepath.Join(bad, "results.json"), func(m map[string]any) { cond(m, 0)["pass"] = false })
	if r := execIn(t, Hooks{}, "report", bad, "--html", page); r.code != 1 {
		t.Fatalf("report of a tampered folder: exit %d, want 1", r.code)
	}
	dom = string(headless(t, bin, "--dump-dom", "file://"+page))
	if !strings.Contains(dom, `<span class="verdict inconsistent">DOES NOT VERIFY</span>`) || strings.Contains(dom, `<span class="verdict pass">PASS</span> ·`) {
		t.Error("a tampered folder's page does not say DOES NOT VERIFY, or still shows the PASS badge beside the folder")
	}
}
