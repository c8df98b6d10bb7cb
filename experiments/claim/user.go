package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/store"
)

// A user's own claim statement (--claim-sql) runs article 003's rounds in
// place of the two shipped claims, judged by the TTL claim's oracle, with
// the five mutants beside it as controls that show the rounds can kill a
// wrong statement. The file is read through scenario.Files, so the
// results folder carries it and verify plans from that copy.

// Flags of the user's statements.
const (
	FlagClaimSQL         = "claim-sql"
	FlagClaimFallbackSQL = "claim-fallback-sql"
)

// Statement is a claim statement from a file the user named.
type Statement struct {
	// File is the name as given; the results folder carries a copy.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// SQL is the file's text, which the pool members run as it is.
	SQL string `json:"sql"`
	// Params are the parameters it binds, in order of first use.
	Params []string `json:"params"`
}

// UserClaim is the user's claim under test and its fallback for the old
// schema, nil when none was given.
type UserClaim struct {
	Claim    Statement  `json:"claim"`
	Fallback *Statement `json:"fallback,omitempty"`
	// Oracle says what every round of the statement is judged by.
	Oracle string `json:"oracle"`
}

// NotRun is a condition the settings cannot run, and why. It is expected
// and observed as NotApplicable, so the table states it instead of
// leaving it out.
type NotRun struct {
	Condition string `json:"condition"`
	Reason    string `json:"reason"`
}

// NotApplicable is the expected and observed value of a NotRun condition.
type NotApplicable struct {
	NotApplicable string `json:"not_applicable"`
}

// noFallbackReason is why round 7 does not run a statement given alone.
const noFallbackReason = "the old schema has no claimed_at, and no --" + FlagClaimFallbackSQL + " says how to claim without it"

// Plan plans the settings (planOn), then reads and checks the statements
// the flags name through the request's files and puts them under test.
// On SQLite a statement is prepared here, under ctx; on PostgreSQL only
// its shape is checked here, and the run prepares it on its server before
// the first race (checkOnServer), so verify, which plans again, needs no
// server.
func (Scenario) Plan(ctx context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	b, ov, files := req.Backend, req.Overrides, req.Files
	rest := map[string]string{}
	for k, v := range ov {
		if k != FlagClaimSQL && k != FlagClaimFallbackSQL {
			rest[k] = v
		}
	}
	pl, err := planOn(b, req.Section, rest)
	if err != nil {
		return nil, err
	}
	check := func(q string, v wc.SchemaVersion) ([]string, error) {
		return wc.CheckStatement(ctx, q, v)
	}
	if !b.IsSQLite() {
		check = func(q string, _ wc.SchemaVersion) ([]string, error) {
			names, _, err := wc.CheckShape(q)
			return names, err
		}
	}
	u, err := readUserClaim(ov, files, check)
	if err != nil {
		return nil, err
	}
	if u != nil {
		pl.s = pl.s.withUser(*u)
	}
	return pl, nil
}

// checkFunc checks a statement for table layout v and returns the
// parameters it binds.
type checkFunc func(q string, v wc.SchemaVersion) ([]string, error)

// checkOnServer prepares the user's statements on the run's PostgreSQL
// server, each in a scratch schema of its own, before any race: SQL the
// server cannot run is refused (exit 2) naming the flag and the file, as
// SQLite's check does at plan time; a check a cancelled context stopped is
// no refusal and keeps the cause. On SQLite it does nothing.
func (st Settings) checkOnServer(ctx context.Context, env scenario.Env) error {
	if st.User == nil || env.Backend == nil {
		return nil
	}
	for _, c := range []struct {
		flag string
		s    *Statement
		v    wc.SchemaVersion
	}{{FlagClaimSQL, &st.User.Claim, wc.SchemaNew}, {FlagClaimFallbackSQL, st.User.Fallback, wc.SchemaOld}} {
		if c.s == nil {
			continue
		}
		err := env.Backend.Scratch(ctx, "claim_check", func(s store.Store) error { return wc.CheckOnServer(ctx, s, c.s.SQL, c.v) })
		switch cause := ctx.Err(); {
		case err == nil:
		case errors.Is(err, errclass.ErrHarness):
			return err
		case cause != nil:
			// A signal stopped the check: the cause stays in the chain, and
			// no class is chosen here, so the edge says it was interrupted
			// (exit 130) rather than blame the statement.
			if !errors.Is(err, cause) {
				err = fmt.Errorf("%w (%v)", cause, err)
			}
			return fmt.Errorf("--%s %s: the check on %s was stopped: %w", c.flag, c.s.File, store.BackendPostgres, err)
		default:
			return fmt.Errorf("%w: --%s %s: on %s, the statement %w", errclass.ErrUsage, c.flag, c.s.File, store.BackendPostgres, err)
		}
	}
	return nil
}

// readUserClaim reads and checks the statements the flags name; nil when
// none is named. A statement that could not be a claim is refused here,
// naming its file, before anything runs.
func readUserClaim(ov map[string]string, files scenario.Files, check checkFunc) (*UserClaim, error) {
	name, ok := ov[FlagClaimSQL]
	fb, hasFallback := ov[FlagClaimFallbackSQL]
	if !ok {
		if hasFallback {
			return nil, fmt.Errorf("--%s %s: given without --%s, whose fallback it would be", FlagClaimFallbackSQL, fb, FlagClaimSQL)
		}
		return nil, nil
	}
	c, err := readStatement(files, FlagClaimSQL, name, wc.SchemaNew, check)
	if err != nil {
		return nil, err
	}
	u := &UserClaim{Claim: c, Oracle: fmt.Sprintf("the oracle of the %s claim with boundary %q", wc.TTL, wc.Chosen)}
	if hasFallback {
		f, err := readStatement(files, FlagClaimFallbackSQL, fb, wc.SchemaOld, check)
		if err != nil {
			return nil, err
		}
		u.Fallback = &f
	}
	return u, nil
}

func readStatement(files scenario.Files, flag, name string, v wc.SchemaVersion, check checkFunc) (Statement, error) {
	if strings.TrimSpace(name) == "" {
		return Statement{}, fmt.Errorf("--%s: empty; name a file holding one SQL statement", flag)
	}
	b, err := files.ReadFile(name)
	if err != nil {
		return Statement{}, fmt.Errorf("--%s %s: %w", flag, name, err)
	}
	params, err := check(string(b), v)
	if err != nil {
		return Statement{}, fmt.Errorf("--%s %s: the statement %w", flag, name, err)
	}
	return Statement{File: name, SHA256: results.SHA256Hex(b), SQL: string(b), Params: params}, nil
}

// withUser puts the user's statement under test in place of the shipped
// claims: it runs every round the TTL claim runs, except the old schema's
// when it has no fallback, which is recorded as not run.
func (st Settings) withUser(u UserClaim) Settings {
	st.User = &u
	st.Claims = []wc.Variant{wc.User}
	rounds := make([]Round, len(st.Rounds))
	for i, r := range st.Rounds {
		r.Kinds = append([]wc.Variant{}, r.Kinds...)
		switch {
		case !r.hasKind(wc.TTL):
		case r.Schema == wc.SchemaOld && u.Fallback == nil:
			st.NotRun = append(st.NotRun, NotRun{Condition: RoundCondition(r.ID, wc.User), Reason: noFallbackReason})
		default:
			r.Kinds = append(r.Kinds, wc.User)
		}
		rounds[i] = r
	}
	st.Rounds = rounds
	return st
}

// notRun is the reason a condition is not run; ok is false when it runs.
func (st Settings) notRun(condition string) (string, bool) {
	for _, n := range st.NotRun {
		if n.Condition == condition {
			return n.Reason, true
		}
	}
	return "", false
}

// oracleKind is the claim whose oracle judges v: the TTL claim's for the
// user's statement.
func oracleKind(v wc.Variant) wc.Variant {
	if v == wc.User {
		return wc.TTL
	}
	return v
}

// validateUser checks the recorded user claim against itself: the hashes
// are of the recorded text, and only its conditions can be not run.
func (st Settings) validateUser() error {
	if st.User == nil {
		if len(st.NotRun) > 0 {
			return errors.New("not_run: set, but no user claim is")
		}
		return nil
	}
	if len(st.Claims) != 1 || st.Claims[0] != wc.User {
		return fmt.Errorf("claims: %v, but a user claim runs alone", st.Claims)
	}
	for _, s := range []*Statement{&st.User.Claim, st.User.Fallback} {
		if s != nil && results.SHA256Hex([]byte(s.SQL)) != s.SHA256 {
			return fmt.Errorf("user_claim: the SQL of %s does not hash to its sha256 %s", s.File, s.SHA256)
		}
	}
	for i, n := range st.NotRun {
		id, v, _ := strings.Cut(n.Condition, "/")
		if wc.Variant(v) != wc.User || !st.hasRound(id) {
			return fmt.Errorf("not_run[%d]: %q is not a round of the user claim", i, n.Condition)
		}
	}
	return nil
}

func (st Settings) hasRound(id string) bool {
	for _, r := range st.Rounds {
		if r.ID == id && !r.hasKind(wc.User) {
			return true
		}
	}
	return false
}

// userRows are the rows of one round in the user's table, at most this
// many per round.
const userRows = 6

// userTable says round by round whether the user's statement kept the TTL
// contract and, where it did not, what the contract expected and what the
// statement did.
func userTable(st Settings, res results.ScenarioResult, ex Extra) scenario.Table {
	t := scenario.Table{
		Header: []string{"round", "ok", "field (repetitions)", "contract", "got"},
		Legend: []string{
			"contract: what the TTL claim's oracle expects of the round; got: what your statement did",
			"field (repetitions): race and field that differ, and the repetitions that showed them",
			"a passing round shows its winners per race; race A sets the row up, B is under test",
			"X:now is race X's winner's clock, X:event its caller timestamp, X:winner its follow-up",
		},
	}
	conds := engine.ByName(res)
	var failed []string
	ran := 0
	for _, r := range st.Rounds {
		name := RoundCondition(r.ID, wc.User)
		if reason, ok := st.notRun(name); ok {
			t.Rows = append(t.Rows, []string{r.ID, "n/a", "not applicable", "", cut(reason, 24)})
			t.Legend = append(t.Legend, fmt.Sprintf("n/a: %s is not run: %s", r.ID, reason))
			continue
		}
		c, ok := conds[name]
		if !ok {
			continue
		}
		ran++
		rows := userRoundRows(c, strings.TrimPrefix(ex.ClaimErrors[name], "claim "+st.Fingerprint+": "))
		if !c.Pass {
			failed = append(failed, r.ID)
		}
		for i, row := range rows {
			if i > 0 {
				row[0], row[1] = "", ""
			}
			t.Rows = append(t.Rows, row)
		}
	}
	t.Title = fmt.Sprintf("your statement %s against the TTL contract: holds in all %d rounds run", st.User.Claim.File, ran)
	if len(failed) > 0 {
		t.Title = fmt.Sprintf("your statement %s against the TTL contract: fails %d of %d rounds", st.User.Claim.File, len(failed), ran)
		t.Legend = append(t.Legend, "fails: "+strings.Join(failed, ", "))
	}
	return t
}

// userRoundRows are one round's rows: its winners when it passed, else
// each field that differs from the contract, its findings and the
// statement's first error.
func userRoundRows(c results.ConditionResult, claimErr string) [][]string {
	var exp, obs []Group
	json.Unmarshal(c.Expected, &exp)
	json.Unmarshal(c.Observed, &obs)
	round, _, _ := strings.Cut(c.Name, "/")
	head := []string{round, harness.Mark(c.Pass)}
	if c.Pass && len(exp) > 0 && len(obs) > 0 {
		return [][]string{append(head, "winners", Winners(exp[0].Outcome), Winners(obs[0].Outcome))}
	}
	var rows [][]string
	add := func(field, want, got string) {
		rows = append(rows, append(append([]string{}, head...), field, cut(want, 22), cut(got, 24)))
	}
	if claimErr != "" {
		add("error", "none", claimErr)
	}
	for _, f := range c.Findings {
		add("finding", "", f.Message)
	}
	if len(exp) > 0 {
		for _, g := range obs {
			diffs := scenario.Differences(exp[0].Outcome, g.Outcome)
			sort.SliceStable(diffs, func(i, j int) bool { return fieldRank(diffs[i].Path) < fieldRank(diffs[j].Path) })
			for _, d := range diffs {
				add(raceField(d.Path, exp[0].Outcome)+" ("+repsText(g.Repetitions)+")", unquote(d.Expected), unquote(d.Observed))
			}
		}
	}
	if len(rows) > userRows {
		n := len(rows) - userRows + 1
		rows = append(rows[:userRows-1], append(append([]string{}, head...), fmt.Sprintf("… %d more in results.json", n), "", ""))
	}
	return rows
}

// fieldRank puts the fields a reader looks at first first: winners, then
// whether there is a row, then the rest.
func fieldRank(path string) int {
	switch {
	case strings.HasSuffix(path, ".winners"):
		return 0
	case strings.HasSuffix(path, ".row.present"):
		return 1
	}
	return 2
}

// unquote shows a JSON string value without its quotes.
func unquote(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// raceField names a difference's path by race: "[1].row.count" is
// "B row.count".
func raceField(path string, o []RaceOutcome) string {
	var i int
	if _, err := fmt.Sscanf(path, "[%d]", &i); err != nil || i < 0 || i >= len(o) {
		return path
	}
	_, rest, _ := strings.Cut(path, ".")
	return o[i].Race + " " + rest
}

// repsText renders repetition numbers as ranges: "1-3, 5".
func repsText(reps []int) string {
	var parts []string
	for i := 0; i < len(reps); {
		j := i
		for j+1 < len(reps) && reps[j+1] == reps[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", reps[i], reps[j]))
		} else {
			parts = append(parts, fmt.Sprint(reps[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// cut shortens s to n runes, so a table keeps its width.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// claimSQL is the statement the pool members run for the user's
// requests; "" when there is no user claim.
func (u *UserClaim) claimSQL() string {
	if u == nil {
		return ""
	}
	return u.Claim.SQL
}

// fallbackSQL is the statement the user's claim falls back to; "" for
// none.
func (u *UserClaim) fallbackSQL() string {
	if u == nil || u.Fallback == nil {
		return ""
	}
	return u.Fallback.SQL
}

// userSettings are the report's lines about the user's statements.
func userSettings(u *UserClaim) [][2]string {
	fb := "none: round 7 (old schema) is not applicable"
	if u.Fallback != nil {
		fb = fmt.Sprintf("%s (sha256 %s)", u.Fallback.File, u.Fallback.SHA256[:12])
	}
	binds := "binds no parameter"
	if len(u.Claim.Params) > 0 {
		binds = "binds :" + strings.Join(u.Claim.Params, ", :")
	}
	return [][2]string{
		{"your claim", fmt.Sprintf("%s (sha256 %s), %s", u.Claim.File, u.Claim.SHA256[:12], binds)},
		{"judged by", u.Oracle},
		{"your fallback", fb},
	}
}
