package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// postgresGolden is the stored PostgreSQL folder the side-by-side report
// is tested on: a real run of redelivery and claim under SERIALIZABLE at
// small settings. -update makes it again, which needs the server's
// binaries.
var postgresGolden = struct {
	name string
	args []string
}{"postgres", []string{"--input", "../input.json", "--scenario", "redelivery", "--scenario", "claim", "--backend", "postgres", "--isolation", "serializable",
	"--workers", "2", "--repetitions", "1", "--mutant-repetitions", "1"}}

// compareDirs are the folders set side by side: SQLite with every
// default scenario, PostgreSQL with two, SQLite with redelivery alone.
var compareDirs = []string{
	filepath.Join("..", "testdata", "golden", "small"),
	filepath.Join("..", "testdata", "golden", postgresGolden.name),
	filepath.Join("..", "testdata", "golden", "redelivery"),
}

// TestReportSideBySide renders the stored folders side by side as
// Markdown and HTML and compares both with testdata/golden/compare.*. The
// folders are stored runs, so nothing in the output is volatile but the
// paths, which are given relative. "go test ./cmd -run
// TestReportSideBySide -update" makes the PostgreSQL folder and the
// golden files again.
func TestReportSideBySide(t *testing.T) {
	t.Parallel()
	if *update {
		needPostgres(t)
		dir := compareDirs[1]
		os.RemoveAll(dir)
		args := append([]string{"experiment", "--quiet", "--out", dir}, postgresGolden.args...)
		if r := execIn(t, Hooks{}, args...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	tmp := t.TempDir()
	md, html := filepath.Join(tmp, "compare.md"), filepath.Join(tmp, "compare.html")
	args := append(append([]string{"report"}, compareDirs...), "--md", md, "--html", html)
	if r := execIn(t, Hooks{}, args...); r.code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	stdout := execIn(t, Hooks{}, append([]string{"report"}, compareDirs...)...)
	for _, f := range []string{md, html} {
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		goldenBytes(t, f, got, filepath.Join("..", "testdata", "golden", filepath.Base(f)))
		if f == md && stdout.stdout != string(got) {
			t.Errorf("the Markdown on stdout differs from --md's:\n%s", cmp.Diff(string(got), stdout.stdout))
		}
	}
	checkNotRun(t, mdSections(t, md))
}

// mdSections reads the comparison's Markdown back: per scenario, per
// condition, the cells in folder order.
func mdSections(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	var cur map[string][]string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			cur = map[string][]string{}
			out[strings.TrimPrefix(l, "## ")] = cur
		case cur != nil && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| condition"):
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			cur[cells[0]] = cells[1:]
		}
	}
	return out
}

// checkNotRun: a cell says "not run" exactly where the folder's
// results.json has no such scenario or condition, and every condition any
// folder has is a row.
func checkNotRun(t *testing.T, got map[string]map[string][]string) {
	t.Helper()
	want := map[string]map[string][]bool{}
	for i, dir := range compareDirs {
		var r results.Results
		b, err := os.ReadFile(filepath.Join(dir, results.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, s := range r.Scenarios {
			if want[s.Name] == nil {
				want[s.Name] = map[string][]bool{}
			}
			for _, c := range s.Conditions {
				if want[s.Name][c.Name] == nil {
					want[s.Name][c.Name] = make([]bool, len(compareDirs))
				}
				want[s.Name][c.Name][i] = true
			}
		}
	}
	for sc, conds := range want {
		for cond, held := range conds {
			cells := got[sc][cond]
			if len(cells) != len(compareDirs) {
				t.Errorf("%s %s: %d cells, want one per folder (%d)", sc, cond, len(cells), len(compareDirs))
				continue
			}
			for i, h := range held {
				if notRun := cells[i] == "not run"; notRun == h {
					t.Errorf("%s %s in %s: cell %q, but the folder holds it: %v", sc, cond, compareDirs[i], cells[i], h)
				}
			}
		}
	}
}

// TestReportSideBySideVerifiesFirst: a folder that does not verify is not
// compared. The report names it, exits 1 as verify does, and writes
// nothing.
func TestReportSideBySideVerifiesFirst(t *testing.T) {
	t.Parallel()
	bad := copyFolder(t, compareDirs[2])
	editJSON(t, filepath.Join(bad, "results.json"), func(m map[string]any) { cond(m, 1)["pass"] = false })
	md := filepath.Join(t.TempDir(), "compare.md")
	r := execIn(t, Hooks{}, "report", compareDirs[0], bad, "--md", md)
	if r.code != 1 || !strings.Contains(r.stderr, bad+" does not verify") {
		t.Errorf("a tampered folder: exit %d, stderr %q; want 1 naming %s", r.code, r.stderr, bad)
	}
	if _, err := os.Stat(md); !os.IsNotExist(err) {
		t.Errorf("the report of a folder that does not verify was written (%v)", err)
	}
}
