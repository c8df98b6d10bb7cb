package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	wp "idemlab/worker/pattern"
	"idemlab/worker/store"
)

// patternInput writes an input file whose pattern section lists files.
func patternInput(t *testing.T, files ...string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"pattern": map[string]any{"files": files}})
	p := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readResults reads a folder's results.json.
func readResults(t *testing.T, dir string) results.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPatternOnPostgresIsolation races two bundled patterns, one that
// holds and one that breaks, under each isolation level on a throwaway
// cluster. Each condition's verdict must be what the file's known_unsafe
// says for that level, read here from the file itself, and verify must
// derive the same. Read committed raises no serialization failure for
// these statements: the second racer waits on the row lock and then
// inserts nothing.
func TestPatternOnPostgresIsolation(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	files := []string{patterns + "claim-ttl.json", patterns + "separate-commit.json"}
	unsafe := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := wp.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		unsafe[pf.Name] = false
		for _, k := range pf.KnownUnsafe {
			unsafe[pf.Name] = unsafe[pf.Name] || k == wp.FaultConcurrent
		}
	}
	if unsafe["claim-ttl"] || !unsafe["separate-commit"] {
		t.Fatalf("the bundled files changed: known_unsafe says concurrent %v; this test wants one pattern that holds and one that breaks", unsafe)
	}
	input := patternInput(t, files...)
	for _, level := range store.Isolations {
		iso := level.String()
		t.Run(iso, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			r := execIn(t, Hooks{}, "experiment", "--backend", "postgres", "--isolation", iso, "--scenario", "pattern", "--input", input,
				"--faults", "concurrent", "--rounds", "1", "--out", out)
			if r.code != 0 {
				t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
			}
			res := readResults(t, out)
			sc := res.Scenarios[0]
			var x pattern.Extra
			if err := json.Unmarshal(sc.Extra, &x); err != nil {
				t.Fatal(err)
			}
			for _, p := range x.Patterns {
				for _, c := range p.Conditions {
					if c.Fault != wp.FaultConcurrent {
						continue
					}
					if got := c.Violating > 0; got != unsafe[p.Name] {
						t.Errorf("%s under %s: broke %v, known_unsafe says %v", c.Name, iso, got, unsafe[p.Name])
					}
					if level == store.ReadCommitted && c.Failed[wp.ClassSerialization]+c.Failed[wp.ClassDeadlock] > 0 {
						t.Errorf("%s under read committed: failed steps %v, want no 40001 or 40P01", c.Name, c.Failed)
					}
					t.Logf("%s under %s: %d of %d races broke, failed steps %v", c.Name, iso, c.Violating, c.Trials, c.Failed)
				}
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
				t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternOnPostgresKnownUnsafe: known_unsafe entries qualified by
// backend and isolation decide the verdict on PostgreSQL. separate-commit
// breaks under concurrent deliveries; an entry that covers PostgreSQL at
// read committed passes, one that names only SQLite, or only another
// level, leaves the violation unexpected: exit 1 with the folder written,
// which verify derives again and fails (exit 4). verify --rerun of the
// passing folder runs it again on a cluster of its own. (The power class
// on PostgreSQL is opt-in: TestPatternPowerOnPostgres.)
func TestPatternOnPostgresKnownUnsafe(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	for _, tt := range []struct {
		entry string
		code  int
		text  string
	}{
		{"concurrent@postgres/read-committed", 0, "broke, as listed"},
		{"concurrent@sqlite", 1, "broke ✗"},
		{"concurrent@postgres/serializable", 1, "broke ✗"},
	} {
		t.Run(tt.entry, func(t *testing.T) {
			file := patternFile(t, "separate-commit", func(m map[string]any) { m["known_unsafe"] = []any{tt.entry} })
			r, out := runPattern(t, file, "--backend", "postgres", "--faults", "concurrent", "--rounds", "1")
			if r.code != tt.code || !strings.Contains(r.stdout, tt.text) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", r.code, tt.code, tt.text, r.stdout, r.stderr)
			}
			want := map[int]int{0: 0, 1: 4}[tt.code]
			if v := execIn(t, Hooks{}, "verify", out); v.code != want {
				t.Errorf("verify: exit %d, want %d:\n%s%s", v.code, want, v.stdout, v.stderr)
			}
			if tt.code != 0 {
				return
			}
			// The rerun starts a cluster of its own and races again.
			if v := execIn(t, Hooks{}, "verify", "--rerun", out); v.code != 0 || !strings.Contains(v.stdout, "rerun: pattern reproduced") {
				t.Errorf("verify --rerun: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternOnPostgresRefusesBadStatement: a statement PostgreSQL cannot
// prepare (SQLite's INSERT OR IGNORE) is refused before any trial, naming
// the file, the step and the server's message, with no folder written.
func TestPatternOnPostgresRefusesBadStatement(t *testing.T) {
	needPostgres(t)
	file := patternFile(t, "single-transaction", func(m map[string]any) {
		step(m, 1)["exec"] = "INSERT OR IGNORE INTO processed_events (event_id) VALUES (:event_id)"
	})
	r, out := runPattern(t, file, "--backend", "postgres")
	for _, want := range []string{file, "handler[1].exec", `syntax error at or near "OR"`} {
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q; want 2 with %q", r.code, r.stderr, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written for a refused pattern", out)
	}
}

func step(m map[string]any, i int) map[string]any {
	return m["handler"].([]any)[i].(map[string]any)
}

// TestPsqlHandler runs the bundled bash handler, which speaks to the
// trial's schema through psql, at its points and in races: it holds. A
// mutant that writes the job whether or not its claim took breaks at the
// point after the commit, where the redelivery writes a second job.
func TestPsqlHandler(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skipf("psql handler test skipped: %v", err)
	}
	src, err := os.ReadFile("../testdata/handlers/single_transaction_psql.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, old, new string
		code           int
		text           string
	}{
		{"as shipped", "", "", 0, "held"},
		{"mutant", `if [ "$claimed" = 1 ]; then`, "if true; then", 1, "one job want 1 got 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := string(src)
			if tt.old != "" {
				if !strings.Contains(script, tt.old) {
					t.Fatalf("the handler has no %q to change", tt.old)
				}
				script = strings.Replace(script, tt.old, tt.new, 1)
			}
			if err := os.WriteFile(filepath.Join(dir, "single_transaction_psql.sh"), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile("../testdata/handlers/single-transaction-psql.json")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "single-transaction-psql.json")
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r, out := runPattern(t, file, "--backend", "postgres", "--faults", "points,concurrent", "--rounds", "1")
			if r.code != tt.code || !strings.Contains(r.stdout, tt.text) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", r.code, tt.code, tt.text, r.stdout, r.stderr)
			}
			want := map[int]int{0: 0, 1: 4}[tt.code]
			if v := execIn(t, Hooks{}, "verify", out); v.code != want {
				t.Errorf("verify: exit %d, want %d:\n%s%s", v.code, want, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternOnPostgresVerifyCatchesEdits: on PostgreSQL the fold checks
// the settings each acknowledging worker read back against the run's, and
// the connection string a program got against the trial's schema; an
// edit of either in the folder fails verify.
func TestPatternOnPostgresVerifyCatchesEdits(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	steps := patternFile(t, "single-transaction", nil)
	for _, tt := range []struct {
		name, file string
		args       []string
		old, new   string
		text       string
	}{
		{"the isolation a worker read back", steps, nil, `\"default_transaction_isolation\":\"read committed\"`, `\"default_transaction_isolation\":\"serializable\"`, "the run asks for"},
		{"a program's connection string", "../testdata/handlers/single-transaction-psql.json", nil, `search_path=pattern_`, `search_path=other_`, "env: is"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.file, "psql") {
				if _, err := exec.LookPath("psql"); err != nil {
					t.Skipf("psql handler test skipped: %v", err)
				}
			}
			r, out := runPattern(t, tt.file, "--backend", "postgres", "--faults", "points")
			if r.code != 0 {
				t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
			}
			dir := copyFolder(t, out)
			p := filepath.Join(dir, "raw-processes.jsonl")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.old) {
				t.Fatalf("raw-processes.jsonl has no %q to edit", tt.old)
			}
			os.WriteFile(p, []byte(strings.Replace(string(b), tt.old, tt.new, 1)), 0o644)
			v := execIn(t, Hooks{}, "verify", dir)
			if v.code != 1 || !strings.Contains(v.stdout+v.stderr, tt.text) {
				t.Errorf("verify: exit %d, want 1 with %q:\n%s%s", v.code, tt.text, v.stdout, v.stderr)
			}
		})
	}
}
