package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const patterns = "../testdata/patterns/"

// patternFile writes a copy of a shipped pattern with edits, for a test.
func patternFile(t *testing.T, name string, edit func(m map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(patterns + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	b, _ = json.MarshalIndent(m, "", "  ")
	p := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runPattern(t *testing.T, file string, args ...string) (run, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	argv := append([]string{"experiment", "--scenario", "pattern", "--input", goodInput, "--pattern-file", file, "--out", out}, args...)
	return execIn(t, Hooks{}, argv...), out
}

func TestPatternRefusesABadFile(t *testing.T) {
	file := patternFile(t, "single-transaction", func(m map[string]any) {
		m["handler"].([]any)[0] = map[string]any{"exec": "SELECT 1"}
	})
	r, out := runPattern(t, file)
	if r.code != 2 || !strings.Contains(r.stderr, "handler[3].commit: no transaction is open") {
		t.Errorf("exit %d, stderr %q; want 2 naming handler[3].commit", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written for a refused pattern", out)
	}
}

// TestPatternKnownUnsafe: a pattern with a known bug fails the run; the
// same pattern with the class in known_unsafe passes; a safe pattern that
// lists a class fails, since the expected violation never showed.
func TestPatternKnownUnsafe(t *testing.T) {
	tests := []struct {
		name, pattern string
		unsafe        []any
		code          int
		text          string
	}{
		{"a known bug fails", "separate-commit", []any{}, 1, "one job: want 1, got 2"},
		{"a listed bug passes", "separate-commit", []any{"points"}, 0, "broke, as known_unsafe expects"},
		{"a safe pattern that lists a class fails", "single-transaction", []any{"points"}, 1, "held, but known_unsafe lists it: the run fails ✗"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := patternFile(t, tt.pattern, func(m map[string]any) { m["known_unsafe"] = tt.unsafe })
			r, out := runPattern(t, file, "--faults", "points")
			if r.code != tt.code || !strings.Contains(r.stdout, tt.text) {
				t.Fatalf("exit %d, want %d, with %q in stdout:\n%s%s", r.code, tt.code, tt.text, r.stdout, r.stderr)
			}
			want := map[int]int{0: 0, 1: 4}[tt.code]
			if v := execIn(t, Hooks{}, "verify", out); v.code != want {
				t.Errorf("verify: exit %d, want %d:\n%s%s", v.code, want, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternFaultClasses runs each fault class on the single-transaction
// pattern at small settings; it holds under each but the cut after the
// ACK under DELETE/FULL, which the file lists.
func TestPatternFaultClasses(t *testing.T) {
	file := patternFile(t, "single-transaction", func(m map[string]any) { m["power"] = []any{"DELETE/FULL", "WAL/FULL"} })
	for _, tt := range []struct {
		faults string
		args   []string
		row    string
	}{
		{"points", nil, "points "},
		{"random", []string{"--trials", "6"}, "random "},
		{"concurrent", []string{"--rounds", "1"}, "concurrent "},
		{"power", nil, "power WAL/FULL"},
	} {
		t.Run(tt.faults, func(t *testing.T) {
			r, out := runPattern(t, file, append([]string{"--faults", tt.faults}, tt.args...)...)
			if r.code != 0 || !strings.Contains(r.stdout, tt.row) {
				t.Fatalf("exit %d, want 0 with a %q row:\n%s%s", r.code, tt.row, r.stdout, r.stderr)
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
				t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternVerifyCatchesEdits: the folder carries the pattern file, so
// an edited copy, or an edited invariant value, fails verify.
func TestPatternVerifyCatchesEdits(t *testing.T) {
	file := patternFile(t, "separate-commit", func(m map[string]any) { m["known_unsafe"] = []any{"points"} })
	r, out := runPattern(t, file, "--faults", "points")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tt := range []struct {
		name, file, old, new, text string
	}{
		{"the pattern's copy", "attachments/1-separate-commit.json", `"equals": 1`, `"equals": 2`, "attachments/1-separate-commit.json hashes to"},
		{"an invariant value", "observations.jsonl", `"values":{"one job":2`, `"values":{"one job":1`, ".violating: is "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFolder(t, out)
			p := filepath.Join(dir, tt.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.old) {
				t.Fatalf("%s has no %q to edit", tt.file, tt.old)
			}
			os.WriteFile(p, []byte(strings.Replace(string(b), tt.old, tt.new, 1)), 0o644)
			v := execIn(t, Hooks{}, "verify", dir)
			if v.code != 1 || !strings.Contains(v.stdout+v.stderr, tt.text) {
				t.Errorf("verify: exit %d, want 1 with %q:\n%s%s", v.code, tt.text, v.stdout, v.stderr)
			}
		})
	}
}
