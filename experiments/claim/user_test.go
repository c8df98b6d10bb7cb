package claim

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
)

// files serves statement files from memory, as a results folder does.
type files map[string][]byte

func (f files) ReadFile(name string) ([]byte, error) {
	if b, ok := f[name]; ok {
		return b, nil
	}
	return nil, errors.New("no such file")
}

// shippedFiles holds the example statements under their testdata names.
func shippedFiles(tb testing.TB) files {
	tb.Helper()
	out := files{}
	for _, n := range []string{"ttl.sql", "old-schema-fallback.sql", "do-nothing.sql"} {
		b, err := os.ReadFile("../../testdata/claims/" + n)
		if err != nil {
			tb.Fatal(err)
		}
		out[n] = b
	}
	return out
}

func planUser(tb testing.TB, fs files, ov map[string]string) Settings {
	tb.Helper()
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section(tb, smallInput(2, 1)), Overrides: ov, Files: fs})
	if err != nil {
		tb.Fatal(err)
	}
	return p.Settings().(Settings)
}

// TestPlanUserClaim: the user's statement replaces the shipped claims on
// every round the TTL claim runs; round 7 needs a fallback and is
// otherwise recorded as not run, with its reason.
func TestPlanUserClaim(t *testing.T) {
	fs := shippedFiles(t)
	for _, tt := range []struct {
		name   string
		ov     map[string]string
		notRun []string
	}{
		{"alone", map[string]string{FlagClaimSQL: "ttl.sql"}, []string{"7-old-schema/user"}},
		{"with a fallback", map[string]string{FlagClaimSQL: "ttl.sql", FlagClaimFallbackSQL: "old-schema-fallback.sql"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := planUser(t, fs, tt.ov)
			if diff := cmp.Diff([]wc.Variant{wc.User}, st.Claims); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			var notRun []string
			for _, n := range st.NotRun {
				notRun = append(notRun, n.Condition)
			}
			if diff := cmp.Diff(tt.notRun, notRun); diff != "" {
				t.Errorf("not run (-want +got):\n%s", diff)
			}
			for _, r := range st.Rounds {
				_, skipped := st.notRun(RoundCondition(r.ID, wc.User))
				if want := r.hasKind(wc.TTL) && !skipped; r.hasKind(wc.User) != want {
					t.Errorf("round %s runs the user's claim: %v, want %v", r.ID, r.hasKind(wc.User), want)
				}
			}
			if st.User.Claim.SHA256 != results.SHA256Hex(fs["ttl.sql"]) || st.User.Claim.SQL != string(fs["ttl.sql"]) {
				t.Errorf("claim recorded as %+v", st.User.Claim)
			}
			if got := st.PoolArgs("pool-1"); got.ClaimSQL != st.User.Claim.SQL || got.FallbackSQL != st.User.fallbackSQL() {
				t.Errorf("pool args carry %q and %q", got.ClaimSQL, got.FallbackSQL)
			}
			if err := st.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestPlanUserClaimRefuses: every refusal names the flag and the file.
func TestPlanUserClaimRefuses(t *testing.T) {
	fs := shippedFiles(t)
	fs["param.sql"] = []byte("UPDATE event_claims SET count = :count WHERE fingerprint = :fp")
	tests := []struct {
		name string
		ov   map[string]string
		want string
	}{
		{"a fallback alone", map[string]string{FlagClaimFallbackSQL: "old-schema-fallback.sql"}, "--claim-fallback-sql old-schema-fallback.sql: given without --claim-sql"},
		{"a missing file", map[string]string{FlagClaimSQL: "nope.sql"}, "--claim-sql nope.sql: no such file"},
		{"an unknown parameter", map[string]string{FlagClaimSQL: "param.sql"}, "--claim-sql param.sql: the statement binds :count"},
		{"a fallback that needs claimed_at", map[string]string{FlagClaimSQL: "ttl.sql", FlagClaimFallbackSQL: "ttl.sql"}, "--claim-fallback-sql ttl.sql: the statement does not prepare against the old event_claims schema"},
		{"an empty name", map[string]string{FlagClaimSQL: " "}, "--claim-sql: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section(t, smallInput(2, 1)), Overrides: tt.ov, Files: fs})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section(t, smallInput(2, 1)), Overrides: map[string]string{FlagClaimSQL: "ttl.sql"}}); err == nil {
		t.Error("Plan, which reads no files, accepted --claim-sql")
	}
}

// TestValidateUserClaim: recorded settings whose statement text and hash
// disagree, or that skip a condition without a user claim, are refused.
func TestValidateUserClaim(t *testing.T) {
	st := planUser(t, shippedFiles(t), map[string]string{FlagClaimSQL: "ttl.sql"})
	edited := st
	u := *st.User
	u.Claim.SQL += " "
	edited.User = &u
	if err := edited.Validate(); err == nil || !strings.Contains(err.Error(), "does not hash") {
		t.Errorf("edited SQL: %v", err)
	}
	plain := Derive(smallInput(2, 1), true)
	plain.NotRun = st.NotRun
	if err := plain.Validate(); err == nil || !strings.Contains(err.Error(), "not_run") {
		t.Errorf("not run without a user claim: %v", err)
	}
	other := st
	other.NotRun = []NotRun{{Condition: "3-after-ttl/user", Reason: "x"}}
	if err := other.Validate(); err == nil || !strings.Contains(err.Error(), "not_run[0]") {
		t.Errorf("a round that runs marked not run: %v", err)
	}
}

// TestUserClaimVerdicts folds histories made by the statements: the TTL
// example keeps the contract in every round it runs, round 7 included
// when it has a fallback; the DO NOTHING statement fails exactly the
// rounds that kill the article's DO NOTHING mutant in the same run, and
// the report's table names them.
func TestUserClaimVerdicts(t *testing.T) {
	fs := shippedFiles(t)
	tests := []struct {
		name string
		ov   map[string]string
		pass bool
	}{
		{"the TTL statement alone", map[string]string{FlagClaimSQL: "ttl.sql"}, true},
		{"the TTL statement with a fallback", map[string]string{FlagClaimSQL: "ttl.sql", FlagClaimFallbackSQL: "old-schema-fallback.sql"}, true},
		{"the DO NOTHING statement", map[string]string{FlagClaimSQL: "do-nothing.sql"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := planUser(t, fs, tt.ov)
			res := scenario.Evaluate(New(), tt.ov, scenario.Marshal(st), history(t, st).records(t))
			if f := res.AllFindings(); len(f) > 0 {
				t.Fatalf("findings: %v", f)
			}
			if res.Pass != tt.pass {
				t.Errorf("pass %v, want %v", res.Pass, tt.pass)
			}
			var failed []string
			seen := map[string]bool{}
			for _, c := range res.Conditions {
				seen[c.Name] = true
				if id, v, _ := strings.Cut(c.Name, "/"); wc.Variant(v) == wc.User && !c.Pass {
					failed = append(failed, id)
				}
			}
			for _, n := range st.NotRun {
				if !seen[n.Condition] {
					t.Errorf("%s is not in the table", n.Condition)
				}
			}
			var ex Extra
			if err := scenario.DecodeStrict(res.Extra, &ex); err != nil {
				t.Fatal(err)
			}
			var want []string
			if !tt.pass {
				want = mutantRow(t, ex, wc.MutantDoNothing).KilledBy
			}
			if diff := cmp.Diff(want, failed); diff != "" {
				t.Errorf("failed rounds (-the DO NOTHING mutant's killers +the statement's):\n%s", diff)
			}
			sec, err := New().Report(res)
			if err != nil {
				t.Fatal(err)
			}
			checkUserTable(t, sec, failed)
		})
	}
}

func mutantRow(tb testing.TB, ex Extra, m wc.Variant) MutantRow {
	tb.Helper()
	if ex.Mutants != nil {
		for _, r := range ex.Mutants.Rows {
			if r.Mutant == m {
				return r
			}
		}
	}
	tb.Fatalf("no mutant row for %s", m)
	return MutantRow{}
}

// checkUserTable finds the user's table: it fits 100 columns and its
// legend names the failed rounds, each of which has a ✗ row.
func checkUserTable(tb testing.TB, sec scenario.Section, failed []string) {
	tb.Helper()
	i := slices.IndexFunc(sec.Tables, func(t scenario.Table) bool { return strings.HasPrefix(t.Title, "your statement ") })
	if i < 0 {
		tb.Fatal("no table of the user's statement")
	}
	t := sec.Tables[i]
	widths := map[int]int{}
	marked := map[string]bool{}
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		for j, c := range r {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
		if r[1] == "✗" {
			marked[r[0]] = true
		}
	}
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	if total > 100 {
		tb.Errorf("the table is %d columns wide", total)
	}
	for _, id := range failed {
		if !marked[id] || !strings.Contains(strings.Join(t.Legend, " "), id) {
			tb.Errorf("round %s failed, but the table does not say so:\n%v\n%v", id, t.Rows, t.Legend)
		}
	}
	if len(marked) != len(failed) {
		tb.Errorf("%d rounds marked failed, want %d", len(marked), len(failed))
	}
}

// TestFoldClaimErrors: only the user's statement's failure is a result;
// an error on another claim's entry, or a path and an error that
// disagree, is a finding.
func TestFoldClaimErrors(t *testing.T) {
	st := planUser(t, shippedFiles(t), map[string]string{FlagClaimSQL: "ttl.sql"})
	tests := []struct {
		name string
		v    wc.Variant
		edit func(e *wc.Entry)
	}{
		{"an error on a mutant's claim", wc.MutantNoWhere, func(e *wc.Entry) { e.ClaimError, e.Outcome.Path = "boom", wc.PathError }},
		{"the error path without an error", wc.User, func(e *wc.Entry) { e.Outcome.Path = wc.PathError }},
		{"an error on a claim that took the upsert", wc.User, func(e *wc.Entry) { e.ClaimError = "boom" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := history(t, st)
			i := h.find(t, RoundCondition("1-fresh", tt.v), "A")
			tt.edit(h.entry(t, i, 0))
			_, findings := fold(t, st, h.records(t))
			if !slices.ContainsFunc(findings, func(f results.Finding) bool { return strings.Contains(f.Field, "claim_error") }) {
				t.Errorf("no claim_error finding among %v", findings)
			}
		})
	}
}
