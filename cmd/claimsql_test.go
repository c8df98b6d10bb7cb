package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

const claims = "../testdata/claims/"

// runClaimSQL runs the claim scenario with the user's statements at the
// smallest settings: two racers, one repetition, one per mutant.
func runClaimSQL(t *testing.T, args ...string) (run, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	argv := append([]string{"experiment", "--scenario", "claim", "--input", "../input.json", "--out", out,
		"--workers", "2", "--repetitions", "1", "--mutant-repetitions", "1"}, args...)
	return execIn(t, Hooks{}, argv...), out
}

// userLine is the line of the user's table for a round.
func userLine(stdout, round string) string {
	_, table, _ := strings.Cut(stdout, "your statement ")
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, round+" ") {
			return l
		}
	}
	return ""
}

// claimResult reads results.json: the user's failed rounds, and the rounds
// that killed the article's DO NOTHING mutant in the same run.
func claimResult(t *testing.T, out string) (failed, killers []string) {
	t.Helper()
	res := readResults(t, out)
	sc := res.Scenarios[0]
	for _, c := range sc.Conditions {
		if id, ok := strings.CutSuffix(c.Name, "/user"); ok && !c.Pass {
			failed = append(failed, id)
		}
	}
	var ex struct {
		Mutants struct {
			Rows []struct {
				Mutant   string   `json:"mutant"`
				KilledBy []string `json:"killed_by"`
			} `json:"rows"`
		} `json:"mutants"`
	}
	if err := json.Unmarshal(sc.Extra, &ex); err != nil {
		t.Fatal(err)
	}
	for _, r := range ex.Mutants.Rows {
		if r.Mutant == "mutant-do-nothing" {
			killers = r.KilledBy
		}
	}
	return failed, killers
}

// TestClaimSQL runs the user's statements through the rounds with real
// processes. The TTL statement keeps the contract, round 7 being not
// applicable without a fallback and passing with one; the DO NOTHING
// statement fails exit 1, and exactly in the rounds that kill the
// article's DO NOTHING mutant in the same run, which the table names.
func TestClaimSQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		code    int
		round7  string
		verify  int
		killers bool
	}{
		{"the TTL statement alone", []string{"--claim-sql", claims + "ttl.sql"}, 0, "n/a not applicable", 0, false},
		{"the TTL statement with a fallback", []string{"--claim-sql", claims + "ttl.sql", "--claim-fallback-sql", claims + "old-schema-fallback.sql"}, 0, "✓ winners", 0, false},
		{"the DO NOTHING statement", []string{"--claim-sql", claims + "do-nothing.sql"}, 1, "n/a not applicable", 4, true},
		// The same statements on a throwaway PostgreSQL cluster, and one
		// in PostgreSQL's own syntax, which SQLite refuses (TestClaimSQLRefuses).
		{"on postgres, the TTL statement with a fallback", []string{"--backend", "postgres", "--claim-sql", claims + "ttl.sql", "--claim-fallback-sql", claims + "old-schema-fallback.sql"}, 0, "✓ winners", 0, false},
		{"on postgres, the TTL statement in PostgreSQL's syntax", []string{"--backend", "postgres", "--claim-sql", claims + "ttl-postgres.sql"}, 0, "n/a not applicable", 0, false},
		{"on postgres, the DO NOTHING statement", []string{"--backend", "postgres", "--claim-sql", claims + "do-nothing.sql"}, 1, "n/a not applicable", 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if slices.Contains(tt.args, "postgres") {
				needPostgres(t)
			}
			r, out := runClaimSQL(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if l := strings.Join(strings.Fields(userLine(r.stdout, "7-old-schema")), " "); !strings.Contains(l, tt.round7) {
				t.Errorf("round 7 reads %q, want %q:\n%s", l, tt.round7, r.stdout)
			}
			failed, killers := claimResult(t, out)
			if !tt.killers {
				killers = nil
			} else if len(killers) == 0 {
				t.Fatal("the DO NOTHING mutant was killed by no round")
			}
			if diff := cmp.Diff(killers, failed); diff != "" {
				t.Errorf("failed rounds (-the mutant's killers +the statement's):\n%s", diff)
			}
			for _, id := range failed {
				if l := userLine(r.stdout, id); !strings.Contains(l, "✗") || !strings.Contains(r.stdout, id) {
					t.Errorf("round %s failed, but the table reads %q", id, l)
				}
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != tt.verify {
				t.Errorf("verify: exit %d, want %d:\n%s%s", v.code, tt.verify, v.stdout, v.stderr)
			}
		})
	}
}

// TestClaimSQLVerifyCatchesAnEditedStatement: the folder carries the
// statement, so an edited copy fails verify.
func TestClaimSQLVerifyCatchesAnEditedStatement(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, Hooks{}, "experiment", "--scenario", "claim", "--input", "../input.json", "--out", out,
		"--workers", "2", "--repetitions", "1", "--mutants=false", "--claim-sql", claims+"ttl.sql")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The statement the plan read comes first; the other files of its
	// folder are carried after it.
	entries, _ := os.ReadDir(filepath.Join(out, results.AttachmentsDir))
	beside, _ := os.ReadDir(claims)
	if len(entries) != len(beside) || entries[0].Name() != "1-ttl.sql" {
		t.Fatalf("attachments %v, want the statement, then the other %d files of its folder", entries, len(beside)-1)
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
		t.Fatalf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
	dir := copyFolder(t, out)
	p := filepath.Join(dir, results.AttachmentsDir, "1-ttl.sql")
	b, _ := os.ReadFile(p)
	edited := strings.Replace(string(b), "claimed_at < :cutoff", "claimed_at <= :cutoff", 1)
	if edited == string(b) {
		t.Fatal("the statement has no < to edit")
	}
	os.WriteFile(p, []byte(edited), 0o644)
	v := execIn(t, Hooks{}, "verify", dir)
	if v.code != 1 || !strings.Contains(v.stdout+v.stderr, "attachments/1-ttl.sql hashes to") {
		t.Errorf("verify of an edited statement: exit %d, want 1 naming the copy:\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestClaimSQLRefuses: a statement that cannot be a claim exits 2 before
// anything runs, naming its file, and writes nothing.
func TestClaimSQLRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	param := write("param.sql", "UPDATE event_claims SET count = count + 1 WHERE fingerprint = :fingerprint")
	column := write("column.sql", "INSERT INTO event_claims (fingerprint, owner) VALUES (:fp, 'me')")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown parameter", []string{"--claim-sql", param}, "--claim-sql " + param + ": the statement binds :fingerprint"},
		{"a column the schema lacks", []string{"--claim-sql", column}, "--claim-sql " + column + ": the statement does not prepare"},
		{"a fallback that does not prepare on the old schema", []string{"--claim-sql", claims + "ttl.sql", "--claim-fallback-sql", claims + "ttl.sql"}, "--claim-fallback-sql " + claims + "ttl.sql: the statement does not prepare against the old"},
		{"a fallback alone", []string{"--claim-fallback-sql", claims + "old-schema-fallback.sql"}, "given without --claim-sql"},
		{"a missing file", []string{"--claim-sql", filepath.Join(dir, "nope.sql")}, "nope.sql: open"},
		{"PostgreSQL's syntax on SQLite", []string{"--claim-sql", claims + "ttl-postgres.sql"}, "ttl-postgres.sql: the statement does not prepare against the new event_claims schema: unrecognized token"},
		{"on postgres, a column the schema lacks", []string{"--backend", "postgres", "--claim-sql", column}, "--claim-sql " + column + ": on postgres, the statement does not prepare against the new event_claims schema: ERROR: column \"owner\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if slices.Contains(tt.args, "postgres") {
				needPostgres(t)
			}
			r, out := runClaimSQL(t, tt.args...)
			// A statement checked on the server is refused once the run
			// has begun: the progress said what was to run, then the error.
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "idemlab: ") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", r.code, r.stderr, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written for a refused statement", out)
			}
		})
	}
}
