package review

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
	t.Skip("chromium not installed: apt-get install -y chromium to run the browser check")
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

func TestReportHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	rep := goldenReport(t, goldenDir)
	var html bytes.Buffer
	if err := RenderHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"http://", "https://", "<script", "<link", "src="} {
		if bytes.Contains(bytes.ReplaceAll(html.Bytes(), []byte("http://www.w3.org/"), nil), []byte(banned)) {
			t.Errorf("page contains %q; it must be self-contained", banned)
		}
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, html.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page
	dom := string(headless(t, bin, "--dump-dom", url))
	for _, want := range []string{"Article 000", `id="article-000"`, "8 of 8 cells match", `id="chart-redelivery-jobs"`, "follow_up_jobs rows after each delivery"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := strings.Count(dom, "<table"); n < 4 {
		t.Errorf("rendered page has %d tables, want at least 4 (article, conditions, environment, hashes)", n)
	}
	if n := strings.Count(dom, "<svg"); n < 1 {
		t.Errorf("rendered page has %d inline SVGs, want at least 1", n)
	}
	shot := filepath.Join(dir, "report.png")
	headless(t, bin, "--screenshot="+shot, "--window-size=1280,2000", url)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 20000 {
		t.Fatalf("screenshot %s missing or nearly empty: %v", shot, err)
	}
	if dst := os.Getenv("IDEMLAB_SCREENSHOT"); dst != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(dst, b, 0o644)
	}
}

func TestReportHTMLInBrowserBatchClaim(t *testing.T) {
	bin := chromium(t)
	rep := goldenReport(t, goldenBCDir)
	var html bytes.Buffer
	if err := RenderHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, html.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	for _, want := range []string{
		`id="article-002"`, "18 of 18 cells match", `id="article-003"`, "16 of 16 cells match", "not judged",
		`id="chart-batch-timings-before_accept"`, `id="chart-batch-timings-after_accept"`, `id="chart-claim-winners"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := strings.Count(dom, "<svg"); n < 3 {
		t.Errorf("rendered page has %d inline SVGs, want at least 3", n)
	}
}
