package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"idemlab/experiments/results"
)

// withInvariant writes a shipped pattern whose only invariant is iv, with
// no class listed as known unsafe.
func withInvariant(t *testing.T, name string, iv map[string]any) string {
	t.Helper()
	return patternFile(t, name, func(m map[string]any) {
		m["invariants"] = []any{iv}
		m["known_unsafe"] = []any{}
	})
}

// firstFailure is the first line of stderr that names a failed condition.
func firstFailure(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "FAIL ") {
			continue
		}
		// A long failure line wraps between phrases onto lines indented
		// by two spaces; joined, it is the line summary.json keeps.
		for _, more := range lines[i+1:] {
			rest, ok := strings.CutPrefix(more, "  ")
			if !ok {
				break
			}
			l += " " + rest
		}
		return l
	}
	return ""
}

// TestInvariantMustReturnOneInteger: an invariant that returns no row,
// NULL, two rows or (on SQLite, whose columns have no fixed type) text, or
// that fails as it runs, is a finding on every trial, from the discovery delivery on, never a 0 and
// never a harness failure: exit 1, the folder written, the discovery
// condition's line first naming the invariant and what came back, and
// verify deriving the same (exit 4). The no-row case is the separate-commit
// pattern, which duplicates its job under points, with an at_most 1
// invariant grouped over the wrong value: read as 0 it passed every class.
func TestInvariantMustReturnOneInteger(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, pattern, query, text string
		also                       string
	}{
		{"no row", "separate-commit", "SELECT count(*) FROM follow_up_jobs WHERE event_id = :event_id GROUP BY event_id HAVING event_id = 'wrong'", "returned no row", "write count(*) for a count"},
		{"NULL", "separate-commit", "SELECT max(length(job_key)) FROM follow_up_jobs WHERE event_id = 'wrong'", "returned NULL", "coalesce"},
		{"two rows", "single-transaction", "SELECT count(*) FROM follow_up_jobs WHERE event_id = :event_id UNION ALL SELECT 0", "returned 2 rows", "an invariant returns one row"},
		{"a text column", "single-transaction", "SELECT max(job_key) FROM follow_up_jobs WHERE event_id = :event_id", `returned "review-`, ", not an integer (type text)"},
		{"a query that fails as it runs", "single-transaction", "SELECT sum(n) FROM (SELECT 9223372036854775807 AS n UNION ALL SELECT count(*) FROM follow_up_jobs WHERE event_id = :event_id)", "failed as it ran: integer overflow", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := withInvariant(t, tt.pattern, map[string]any{"name": "at most one shipment", "query": tt.query, "at_most": 1})
			r, out := runPattern(t, file, "--faults", "points")
			want := "FAIL pattern/" + tt.pattern + "/none: the discovery delivery (no faults): invariant 'at most one shipment' " + tt.text
			if r.code != 1 || !strings.HasPrefix(firstFailure(r.stderr), want) {
				t.Fatalf("exit %d, first failure %q; want exit 1 and %q:\n%s%s", r.code, firstFailure(r.stderr), want, r.stdout, r.stderr)
			}
			if !regexp.MustCompile(`none \(discovery\)\s+1\s+0\s+findings ✗`).MatchString(r.stdout) {
				t.Errorf("the table's discovery row does not say findings ✗:\n%s", r.stdout)
			}
			if !strings.Contains(firstFailure(r.stderr), tt.also) {
				t.Errorf("first failure %q has no %q", firstFailure(r.stderr), tt.also)
			}
			if !strings.Contains(r.stderr, "pattern/"+tt.pattern+"/points: trial ") {
				t.Errorf("the points class has no finding on its trials:\n%s", r.stderr)
			}
			res := readResults(t, out)
			for _, sc := range res.Scenarios {
				for _, c := range sc.Conditions {
					if c.Pass {
						t.Errorf("condition %s passed", c.Name)
					}
				}
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != 4 {
				t.Errorf("verify: exit %d, want 4:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestProgramThatCannotRunItsScript: a program whose discovery delivery
// exits non-zero before announcing any point (python3 with a script that
// is not there) stops the run before any trial with exit 2 and the
// program's own stderr line, and writes nothing.
func TestProgramThatCannotRunItsScript(t *testing.T) {
	needPython(t)
	file := programPattern(t, "", func(m map[string]any) { m["command"] = []any{"python3", "missing.py"} })
	r, out := runPattern(t, file)
	for _, want := range []string{`["python3" "missing.py"] exited 2 in the discovery delivery (no faults) before announcing any point`, "can't open file", "missing.py': [Errno 2]"} {
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q; want 2 with %q", r.code, r.stderr, want)
		}
	}
	if strings.Contains(r.stderr+r.stdout, "ACKed") {
		t.Errorf("the run judged trials:\n%s%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written for a program that cannot run its script", out)
	}
}

// TestPatternOnPostgresInvariantTypes: on PostgreSQL the server describes
// an invariant's column at plan time, so a boolean (count(*) > 0), a text
// column or two columns are refused before any trial (exit 2, naming the
// invariant and the type, nothing written); sum() of a bigint, a numeric,
// is accepted and judged as the integer it holds.
func TestPatternOnPostgresInvariantTypes(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	for _, tt := range []struct {
		name, query string
		code        int
		text        string
	}{
		{"a boolean", "SELECT count(*) > 0 FROM follow_up_jobs WHERE event_id = :event_id", 2, "invariant 'one job' returns a column of type bool"},
		{"a text column", "SELECT max(job_key) FROM follow_up_jobs WHERE event_id = :event_id", 2, "invariant 'one job' returns a column of type text"},
		{"two columns", "SELECT count(*), 1 FROM follow_up_jobs WHERE event_id = :event_id", 2, "invariant 'one job' returns 2 columns"},
		{"sum() is a numeric", "SELECT sum(CAST(1 AS bigint)) FROM follow_up_jobs WHERE event_id = :event_id", 0, `"type":"numeric","text":"1"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := withInvariant(t, "single-transaction", map[string]any{"name": "one job", "query": tt.query, "equals": 1})
			r, out := runPattern(t, file, "--backend", "postgres", "--faults", "points")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == 2 {
				for _, want := range []string{file, "invariants[0].query", tt.text} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("stderr %q has no %q", r.stderr, want)
					}
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("%s was written for a refused pattern", out)
				}
				return
			}
			b, err := os.ReadFile(filepath.Join(out, "observations.jsonl"))
			if err != nil || !strings.Contains(string(b), tt.text) {
				t.Errorf("observations hold no %s (%v)", tt.text, err)
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
				t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternFormat4ValuesVerify: a folder of format 4 held each query
// invariant's value as a bare integer; this build reads it as that integer
// and verifies it as before. The folder is this build's own, with its
// values rewritten as format 4 wrote them.
func TestPatternFormat4ValuesVerify(t *testing.T) {
	t.Parallel()
	_, out := runPattern(t, patternFile(t, "separate-commit", nil), "--faults", "points")
	dir := copyFolder(t, out)
	obs := filepath.Join(dir, "observations.jsonl")
	b, err := os.ReadFile(obs)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`\{"rows":1,"columns":1,"type":"integer","text":"(-?[0-9]+)"\}`).ReplaceAll(b, []byte("$1"))
	if bytes.Contains(old, []byte(`"rows"`)) || !bytes.Contains(old, []byte(`"values":{"one job":`)) {
		t.Fatalf("the values were not all rewritten as bare integers:\n%s", old)
	}
	res := filepath.Join(dir, "results.json")
	rb, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	rb4 := bytes.Replace(rb, []byte(fmt.Sprintf(`"format": %d`, results.FormatVersion)), []byte(`"format": 4`), 1)
	if bytes.Equal(rb, rb4) {
		t.Fatalf("results.json has no format %d to rewrite", results.FormatVersion)
	}
	// Format 4 recorded no executable per process.
	procs := filepath.Join(dir, results.ProcessesFile)
	pb, err := os.ReadFile(procs)
	if err != nil {
		t.Fatal(err)
	}
	pb4 := regexp.MustCompile(`,?"executable_sha256":"[0-9a-f]*"`).ReplaceAll(pb, nil)
	if bytes.Equal(pb, pb4) {
		t.Fatal("the process lines have no executable_sha256 to remove")
	}
	os.WriteFile(procs, pb4, 0o644)
	os.WriteFile(obs, old, 0o644)
	os.WriteFile(res, rb4, 0o644)
	if v := execIn(t, Hooks{}, "verify", dir); v.code != 0 || !strings.Contains(v.stderr+v.stdout, "format 4") {
		t.Errorf("verify: exit %d, want 0 with a notice of format 4:\n%s%s", v.code, v.stdout, v.stderr)
	}
}
