package claim

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/store"
)

// shipped reads one of the example statements in testdata/claims.
func shipped(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile("../../testdata/claims/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestCheckStatementAccepts reads the parameters of statements that may
// run as a claim, wherever the text puts them.
func TestCheckStatementAccepts(t *testing.T) {
	tests := []struct {
		name, sql string
		schema    SchemaVersion
		want      []string
	}{
		{"the shipped TTL example", shipped(t, "ttl.sql"), SchemaNew, []string{"fp", "source", "level", "message", "ts", "now", "cutoff"}},
		{"the shipped fallback on the old schema", shipped(t, "old-schema-fallback.sql"), SchemaOld, []string{"fp", "source", "level", "message", "ts"}},
		{"the shipped TTL claim's own SQL", mustSQL(t, TTL), SchemaNew, []string{"fp", "source", "level", "message", "ts", "now", "cutoff"}},
		{"colons in literals, names and comments are not parameters",
			"/* :a */ UPDATE \"event_claims\" SET message = ':b' || 'it'':s' WHERE [fingerprint] = :fp -- :c\n;  -- trailing",
			SchemaNew, []string{"fp"}},
		{"a parameter used twice counts once", "UPDATE event_claims SET first_seen = :ts, last_seen = :ts WHERE fingerprint = :fp", SchemaNew, []string{"ts", "fp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckStatement(context.Background(), tt.sql, tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckStatementRefuses has one case per refusal; each names why.
func TestCheckStatementRefuses(t *testing.T) {
	tests := []struct {
		name, sql string
		schema    SchemaVersion
		want      string
	}{
		{"an unknown parameter", "UPDATE event_claims SET count = :count WHERE fingerprint = :fp", SchemaNew, "binds :count, which is not a claim parameter"},
		{"a positional parameter", "UPDATE event_claims SET count = 1 WHERE fingerprint = ?", SchemaNew, "binds ?,"},
		{"a numbered parameter", "UPDATE event_claims SET count = 1 WHERE fingerprint = ?1", SchemaNew, "binds ?1,"},
		{"a known name with another prefix", "UPDATE event_claims SET count = 1 WHERE fingerprint = @fp", SchemaNew, "binds @fp,"},
		{"another table", "INSERT INTO claims (fingerprint) VALUES (:fp)", SchemaNew, "does not prepare against the new event_claims schema: no such table: claims"},
		{"a column the table lacks", "INSERT INTO event_claims (fingerprint, owner) VALUES (:fp, 'me')", SchemaNew, "has no column named owner"},
		{"the new claim on the old schema", shipped(t, "ttl.sql"), SchemaOld, "does not prepare against the old event_claims schema"},
		{"two statements", "UPDATE event_claims SET count = 1; DELETE FROM event_claims", SchemaNew, "is more than one statement"},
		{"only a comment", "-- todo\n/* later */", SchemaNew, "is empty"},
		{"an unterminated literal", "UPDATE event_claims SET message = 'oops WHERE fingerprint = :fp", SchemaNew, "unterminated '"},
		{"a statement that does not write", "SELECT count(*) FROM event_claims WHERE fingerprint = :fp", SchemaNew, `begins with "SELECT"`},
		{"a schema change", "DROP TABLE event_claims", SchemaNew, `begins with "DROP"`},
		{"too long", "UPDATE event_claims SET message = '" + strings.Repeat("x", MaxStatementBytes) + "'", SchemaNew, "at most"},
		{"a NUL byte", "UPDATE event_claims SET count = 1\x00", SchemaNew, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckStatement(context.Background(), tt.sql, tt.schema)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestParamTokens checks the reading of parameters against SQLite's
// tokenizer rules on the forms a user might write.
func TestParamTokens(t *testing.T) {
	tests := []struct {
		sql  string
		want []string
	}{
		{"SELECT :a, :a, @b, $c, ?, ?12", []string{":a", "@b", "$c", "?", "?12"}},
		{"SELECT 'x:y', \"p:q\", `r:s`, [t:u], x'3A41'", nil},
		{"SELECT $a::b(cd), :e", []string{"$a::b(cd)", ":e"}},
		{"SELECT 1 /* :a", nil},
		{"SELECT a:b", []string{":b"}},
	}
	for _, tt := range tests {
		got, err := paramTokens(tt.sql)
		if err != nil {
			t.Errorf("%q: %v", tt.sql, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.sql, diff)
		}
	}
}

// TestPrepareCount: the count the reading is checked against is SQLite's
// own, in which a numbered parameter reserves every index below it.
func TestPrepareCount(t *testing.T) {
	for q, want := range map[string]int{
		"UPDATE event_claims SET count = 1 WHERE fingerprint = :fp OR source = :fp": 1,
		"UPDATE event_claims SET count = :a WHERE fingerprint = ?3":                 3,
		"UPDATE event_claims SET count = 1 -- :fp":                                  0,
	} {
		if got, err := prepareCount(context.Background(), q, SchemaNew); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", q, got, err, want)
		}
	}
}

func mustSQL(tb testing.TB, v Variant) string {
	tb.Helper()
	q, err := SQL(v)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// TestClaimUserMatchesTTL runs the shipped TTL example and the TTL claim
// through the same claims on two files: every outcome and the final row
// agree.
func TestClaimUserMatchesTTL(t *testing.T) {
	ctx := context.Background()
	u := Statements{Claim: shipped(t, "ttl.sql")}
	steps := []struct{ now, caller int64 }{
		{t0, t0}, {t0 + 1000, t0 + 1000}, {t0 + ttlMS, t0 + ttlMS}, {t0 + ttlMS + 1, t0 + ttlMS + 1},
		{t0 + ttlMS + 2, t0 + 100*ttlMS}, {t0 + 3*ttlMS, 0},
	}
	mine, ref := openFile(t, SchemaNew), openFile(t, SchemaNew)
	for i, s := range steps {
		got, err := ClaimUser(ctx, mine, u, event(s.caller), s.now, ttl)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want, err := Claim(ctx, ref, TTL, event(s.caller), s.now, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d (-ttl +user):\n%s", i, diff)
		}
	}
	a, _, err := ReadRow(ctx, store.SQLiteDB(mine), "fp-1")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := ReadRow(ctx, store.SQLiteDB(ref), "fp-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, a); diff != "" {
		t.Errorf("row (-ttl +user):\n%s", diff)
	}
}

// TestClaimUserFallbackAndErrors: on the old schema the fallback decides,
// and without one the missing column is the statement's error; any error
// is PathError and no win.
func TestClaimUserFallbackAndErrors(t *testing.T) {
	ctx := context.Background()
	claim, fallback := shipped(t, "ttl.sql"), shipped(t, "old-schema-fallback.sql")
	tests := []struct {
		name   string
		schema SchemaVersion
		u      Statements
		want   []Path
		err    string
	}{
		{"the fallback decides on the old schema", SchemaOld, Statements{claim, fallback}, []Path{PathFallback, PathFallback}, ""},
		{"no fallback: the missing column is an error", SchemaOld, Statements{Claim: claim}, []Path{PathError}, "claimed_at"},
		{"a constraint the statement breaks", SchemaNew, Statements{Claim: "INSERT INTO event_claims (fingerprint, claimed_at) VALUES (:fp, :now)"}, []Path{PathError}, "NOT NULL constraint failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openFile(t, tt.schema)
			for i, want := range tt.want {
				out, err := ClaimUser(ctx, db, tt.u, event(t0), t0+int64(i), ttl)
				if out.Path != want || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
					t.Fatalf("claim %d: path %s, err %v; want %s and an error containing %q", i, out.Path, err, want, tt.err)
				}
				if wantWon := want == PathFallback && i == 0; out.Won != wantWon {
					t.Fatalf("claim %d: won %v, want %v", i, out.Won, wantWon)
				}
			}
		})
	}
}
