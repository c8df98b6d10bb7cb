package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/results"
)

// backendFolder is a stored folder of one scenario on one backend, and
// the arguments that made it at small settings.
type backendFolder struct {
	name string
	args []string
}

// backendComparisons are the pairs set side by side: explore's races and
// durability's crashes on SQLite and on PostgreSQL. The patterns and
// kinds are named, so a new default does not change what the stored
// folders' settings derive from. -update makes the folders again, which
// needs the server's binaries.
var backendComparisons = []struct {
	scenario string
	sqlite   backendFolder
	postgres backendFolder
}{
	{"explore",
		backendFolder{"explore-sqlite", []string{"--scenario", "explore", "--trials", "0", "--rounds", "1"}},
		backendFolder{"explore-postgres", []string{"--scenario", "explore", "--rounds", "1", "--backend", "postgres", "--synchronous-commit", "off"}}},
	{"durability",
		backendFolder{"durability-sqlite", []string{"--scenario", "durability", "--pattern", "redelivery-separate,redelivery-single", "--journal-mode", "WAL", "--synchronous", "NORMAL,FULL"}},
		backendFolder{"durability-postgres", []string{"--scenario", "durability", "--pattern", "redelivery-separate,redelivery-single", "--kind", "kill,server", "--synchronous-commits", "on,off", "--backend", "postgres"}}},
}

func goldenDir(name string) string { return filepath.Join("..", "testdata", "golden", name) }

// TestReportBackendsSideBySide sets each scenario's SQLite folder beside
// its PostgreSQL folder and compares the Markdown with
// testdata/golden/compare-SCENARIO.md. Then, from the folders'
// results.json alone, it checks that the rows line up: every PostgreSQL
// condition stands in the row of the SQLite condition of the same pattern
// and fault (a race of K racers; a kill, or the server crash beside the
// power cut), both cells run, each naming the condition's setting. "go
// test ./cmd -run TestReportBackendsSideBySide -update" makes the folders
// and the golden files again.
func TestReportBackendsSideBySide(t *testing.T) {
	t.Parallel()
	for _, bc := range backendComparisons {
		t.Run(bc.scenario, func(t *testing.T) {
			if *update {
				needPostgres(t)
				for _, f := range []backendFolder{bc.sqlite, bc.postgres} {
					os.RemoveAll(goldenDir(f.name))
					args := append([]string{"experiment", "--quiet", "--input", "../input.json", "--out", goldenDir(f.name)}, f.args...)
					if r := execIn(t, Hooks{}, args...); r.code != 0 {
						t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
					}
				}
			}
			md := filepath.Join(t.TempDir(), "compare-"+bc.scenario+".md")
			args := []string{"report", goldenDir(bc.sqlite.name), goldenDir(bc.postgres.name), "--md", md}
			if r := execIn(t, Hooks{}, args...); r.code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
			}
			got, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			goldenBytes(t, md, got, goldenDir(filepath.Base(md)))
			rows := mdSections(t, md)[bc.scenario]
			sq, pg := storedConditions(t, bc.sqlite.name, bc.scenario), storedConditions(t, bc.postgres.name, bc.scenario)
			checkLinedUp(t, rows, sq, pg)
		})
	}
}

// storedCondition is a condition as a folder's settings record it, with
// the fields either scenario's conditions have.
type storedCondition struct {
	Name              string `json:"name"`
	Pattern           string `json:"pattern"`
	Kind              string `json:"kind"`
	Racers            int    `json:"racers"`
	Isolation         string `json:"isolation"`
	JournalMode       string `json:"journal_mode"`
	Synchronous       string `json:"synchronous"`
	SynchronousCommit string `json:"synchronous_commit"`
}

// fault is what a condition does to its pattern, in the same words on
// both backends: a race of K racers, a kill, or a crash of the storage
// (SQLite's power cut, PostgreSQL's server crash).
func (c storedCondition) fault() string {
	switch c.Kind {
	case "timing-race":
		return fmt.Sprintf("race-%d", c.Racers)
	case "power", "server":
		return "storage-crash"
	}
	return c.Kind
}

// setting is the words a cell must name the condition by.
func (c storedCondition) setting() string {
	switch {
	case c.Isolation != "":
		return c.Isolation
	case c.SynchronousCommit != "":
		return "synchronous_commit=" + c.SynchronousCommit
	case c.JournalMode != "":
		return c.JournalMode + "/" + c.Synchronous
	}
	return ""
}

func storedConditions(t *testing.T, folder, scenario string) []storedCondition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir(folder), results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Scenarios []struct {
			Name     string `json:"name"`
			Settings struct {
				Conditions []storedCondition `json:"conditions"`
			} `json:"settings"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Scenarios {
		if s.Name == scenario {
			return s.Settings.Conditions
		}
	}
	t.Fatalf("%s holds no %s", folder, scenario)
	return nil
}

// inRow says whether a row's label names the condition's pattern and
// fault: "…/timing-race-K" for a race, "…/kill" for a kill, the other row
// of the pattern for a crash of the storage.
func (c storedCondition) inRow(label string) bool {
	if !strings.HasPrefix(label, c.Pattern+"/") {
		return false
	}
	switch c.fault() {
	case "storage-crash":
		return !strings.HasSuffix(label, "/kill")
	case "kill":
		return strings.HasSuffix(label, "/kill")
	}
	return strings.HasSuffix(label, fmt.Sprintf("/timing-race-%d", c.Racers))
}

// checkLinedUp: for every PostgreSQL condition with a SQLite condition of
// the same pattern and fault, the row of that pattern and fault has both
// folders' cells run, the PostgreSQL cell naming the condition's setting
// and the SQLite cell the SQLite condition's. At least one such pair must
// exist, or the folders compare nothing.
func checkLinedUp(t *testing.T, rows map[string][]string, sq, pg []storedCondition) {
	t.Helper()
	pairs := 0
	for _, p := range pg {
		i := slices.IndexFunc(sq, func(s storedCondition) bool { return s.Pattern == p.Pattern && s.fault() == p.fault() })
		if i < 0 {
			continue
		}
		s := sq[i]
		pairs++
		lined := false
		for label, cells := range rows {
			if s.inRow(label) && len(cells) == 2 && cells[0] != "not run" && cells[1] != "not run" &&
				strings.Contains(cells[0], s.setting()) && strings.Contains(cells[1], p.setting()) {
				lined = true
			}
		}
		if !lined {
			t.Errorf("PostgreSQL's %s stands in no row beside SQLite's %s", p.Name, s.Name)
		}
	}
	if pairs == 0 {
		t.Error("no PostgreSQL condition has a SQLite counterpart: the folders compare nothing")
	}
}
