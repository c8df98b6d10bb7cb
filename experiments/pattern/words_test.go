package pattern

import (
	pf "idemlab/experiments/subject/patternfile"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/experiments/suite"
	wp "idemlab/worker/pattern"
)

// TestKnownUnsafeBareAndStrict: a bare "power" asks that some power
// setting break, "power:WAL/NORMAL" that one; an entry naming the
// setting wins over the bare class; a folder recorded before the rule
// (rule empty) reads a bare "power" as every setting.
func TestKnownUnsafeBareAndStrict(t *testing.T) {
	power := func(s string) Condition {
		return Condition{Name: "p/power:" + s, Pattern: "p", Fault: wp.FaultPower, Power: s}
	}
	points := Condition{Name: "p/points", Pattern: "p", Fault: wp.FaultPoints}
	for _, tt := range []struct {
		name    string
		entries []string
		rule    string
		c       Condition
		want    Unsafety
	}{
		{"bare power", []string{"power"}, RuleSomeSetting, power("WAL/NORMAL"), UnsafeSomeSetting},
		{"bare power, older folder", []string{"power"}, "", power("WAL/NORMAL"), UnsafeHere},
		{"the setting listed", []string{"power:WAL/NORMAL"}, RuleSomeSetting, power("WAL/NORMAL"), UnsafeHere},
		{"another setting listed", []string{"power:WAL/NORMAL"}, RuleSomeSetting, power("DELETE/FULL"), Safe},
		{"the setting wins over the class", []string{"power", "power:WAL/NORMAL"}, RuleSomeSetting, power("WAL/NORMAL"), UnsafeHere},
		{"the class beside another setting", []string{"power:WAL/NORMAL", "power"}, RuleSomeSetting, power("DELETE/FULL"), UnsafeSomeSetting},
		{"a bare class of one condition", []string{"points"}, RuleSomeSetting, points, UnsafeHere},
		{"another class", []string{"power"}, RuleSomeSetting, points, Safe},
		{"no fault", []string{"points"}, RuleSomeSetting, Condition{Name: "p/none", Pattern: "p", Fault: FaultNone}, Safe},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := wp.File{Name: "p", KnownUnsafe: tt.entries}
			if got := KnownUnsafe(f, tt.c, wp.Target{Backend: "sqlite"}, tt.rule); got != tt.want {
				t.Errorf("KnownUnsafe(%q, %s, rule %q) = %d, want %d", tt.entries, tt.c.Name, tt.rule, got, tt.want)
			}
		})
	}
}

// powerRecords derives the condition results of a pattern whose power
// settings DELETE/FULL and WAL/NORMAL broke as broke says, through the
// oracle, the fold's observed figure and the verdict rule, as Evaluate
// does: hand-made records of what the trials showed.
func powerRecords(t *testing.T, entries []string, rule string, part *shard.Part, broke map[string]bool) []results.ConditionResult {
	t.Helper()
	p := Pattern{File: wp.File{Name: "p", KnownUnsafe: entries}}
	st := Settings{KnownUnsafeRule: rule, Shard: part, Patterns: []Pattern{p}}
	extra := map[string]*ConditionExtra{}
	for _, s := range []string{"DELETE/FULL", "WAL/NORMAL"} {
		c := Condition{Name: "p/power:" + s, Pattern: "p", Fault: wp.FaultPower, Power: s}
		st.Conditions = append(st.Conditions, c)
		ce := &ConditionExtra{Name: c.Name, Fault: c.Fault, Power: s, Trials: 9}
		if broke[s] {
			ce.Violating = 1
			ce.First = &Violation{Trial: 8, Kind: KindPower, Point: PointACK, Broken: []Broken{{Invariant: "one job", Want: "1", Got: "0"}}}
		}
		extra[c.Name] = ce
	}
	exp, err := Scenario{}.Expect(st)
	if err != nil {
		t.Fatal(err)
	}
	var out []results.ConditionResult
	for i, e := range exp {
		c := st.Conditions[i]
		cr := results.ConditionResult{Name: e.Condition, Expected: scenario.Marshal(e.Value), Observed: scenario.Marshal(pf.VerdictOf(st, extra, p, c))}
		cr.Pass, cr.Differences, err = Scenario{}.Check(cr.Name, cr.Expected, cr.Observed)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cr)
	}
	return out
}

// TestVerdictOfKnownUnsafe: over hand-made records of two power
// settings, which conditions pass, how each row's verdict reads, and
// the failure line of each that fails.
func TestVerdictOfKnownUnsafe(t *testing.T) {
	type row struct{ Pass, Verdict, Failure string }
	const held = "held, but known_unsafe lists it: the run fails"
	for _, tt := range []struct {
		name    string
		entries []string
		rule    string
		part    *shard.Part
		broke   map[string]bool
		want    []row
		breaks  int
	}{
		{"bare power, one setting broke", []string{"power"}, RuleSomeSetting, nil, map[string]bool{"DELETE/FULL": true}, []row{
			{"pass", "broke, as listed", ""},
			{"pass", "held (another setting broke)", ""},
		}, 1},
		{"bare power, none broke", []string{"power"}, RuleSomeSetting, nil, nil, []row{
			{"fail", "held, but known_unsafe lists power: the run fails ✗", "pattern/p/power:DELETE/FULL: held under every power setting, but known_unsafe lists power: the run fails"},
			{"fail", "held, but known_unsafe lists power: the run fails ✗", "pattern/p/power:WAL/NORMAL: held under every power setting, but known_unsafe lists power: the run fails"},
		}, 0},
		{"bare power in an older folder", []string{"power"}, "", nil, map[string]bool{"DELETE/FULL": true}, []row{
			{"pass", "broke, as listed", ""},
			{"fail", held + " ✗", "pattern/p/power:WAL/NORMAL: " + held},
		}, 1},
		{"the setting that held listed", []string{"power:WAL/NORMAL"}, RuleSomeSetting, nil, map[string]bool{"DELETE/FULL": true}, []row{
			{"fail", "broke ✗", "pattern/p/power:DELETE/FULL: trial 8, power cut after the ACK: one job want 1 got 0"},
			{"fail", held + " ✗", "pattern/p/power:WAL/NORMAL: " + held},
		}, 0},
		{"the setting that broke listed", []string{"power:DELETE/FULL"}, RuleSomeSetting, nil, map[string]bool{"DELETE/FULL": true}, []row{
			{"pass", "broke, as listed", ""},
			{"pass", "held", ""},
		}, 1},
		{"bare power in a shard", []string{"power"}, RuleSomeSetting, &shard.Part{Index: 1, Count: 2}, nil, []row{
			{"pass", "held in this shard (the merge judges)", ""},
			{"pass", "held in this shard (the merge judges)", ""},
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conds := powerRecords(t, tt.entries, tt.rule, tt.part, tt.broke)
			res := &results.Results{Scenarios: []results.ScenarioResult{{Name: Name, Conditions: conds}}}
			failures := suite.Failures(scenario.Registry{New()}, res)
			var got []row
			for _, cr := range conds {
				r := row{Pass: map[bool]string{true: "pass", false: "fail"}[cr.Pass], Verdict: verdictText(cr)}
				if !cr.Pass && len(failures) > 0 {
					r.Failure, failures = failures[0], failures[1:]
				}
				got = append(got, r)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if n := expectedBreaks(results.ScenarioResult{Conditions: conds}); n != tt.breaks {
				t.Errorf("expectedBreaks = %d, want %d", n, tt.breaks)
			}
		})
	}
}

// TestFailureLine: the failure line says the first violation's trial,
// what was done to it (the point a crash at the k-th hit landed on, the
// cut after the ACK) and each broken invariant's want and got; printed,
// it wraps between phrases within 100 columns.
func TestFailureLine(t *testing.T) {
	jobs := []Broken{{Invariant: "one job", Want: "1", Got: "0"}, {Invariant: "processed", Want: "1", Got: "0"}}
	for _, tt := range []struct {
		name, condition string
		first           Violation
		want            string
		printed         []string
	}{
		{"a power cut after the ACK", "one-transaction/power:DELETE/FULL", Violation{Trial: 10, Kind: KindPower, Point: PointACK, Broken: jobs},
			"pattern/one-transaction/power:DELETE/FULL: trial 10, power cut after the ACK: one job want 1 got 0; processed want 1 got 0",
			[]string{"FAIL pattern/one-transaction/power:DELETE/FULL: trial 10, power cut after the ACK:", "  one job want 1 got 0; processed want 1 got 0"}},
		{"a crash at the k-th hit names its point", "outbox/random", Violation{Trial: 3, Kind: KindHits, K: 8, Point: "before-4-commit", Broken: []Broken{{Invariant: "notified once", Want: "at most 1", Got: "2"}}},
			"pattern/outbox/random: trial 3, crash at before-4-commit (hit 8): notified once want at most 1 got 2",
			[]string{"FAIL pattern/outbox/random: trial 3, crash at before-4-commit (hit 8):", "  notified once want at most 1 got 2"}},
		{"no ACK", "outbox/points", Violation{Trial: 2, Kind: KindPoint, Point: "after-2-exec", Broken: []Broken{{Invariant: InvariantACK, Want: "an ACK", Got: "none of 3 deliveries"}}},
			"pattern/outbox/points: trial 2, crash at after-2-exec: acknowledged want an ACK got none of 3 deliveries",
			[]string{"FAIL pattern/outbox/points: trial 2, crash at after-2-exec:", "  acknowledged want an ACK got none of 3 deliveries"}},
		{"a kill after a delay", "outbox/random", Violation{Trial: 11, Kind: KindKill, KillUS: 2500, Broken: jobs[:1]},
			"pattern/outbox/random: trial 11, kill after 2500 µs: one job want 1 got 0",
			[]string{"FAIL pattern/outbox/random: trial 11, kill after 2500 µs: one job want 1 got 0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := tt.first
			cr := results.ConditionResult{Name: tt.condition, Expected: scenario.Marshal(Expected{}), Observed: scenario.Marshal(Verdict{Violated: true, First: &first})}
			var err error
			cr.Pass, cr.Differences, err = Scenario{}.Check(cr.Name, cr.Expected, cr.Observed)
			if err != nil || cr.Pass {
				t.Fatalf("Check: pass %v, err %v; want a failure", cr.Pass, err)
			}
			res := &results.Results{Scenarios: []results.ScenarioResult{{Name: Name, Conditions: []results.ConditionResult{cr}}}}
			lines := suite.Failures(scenario.Registry{New()}, res)
			if diff := cmp.Diff([]string{tt.want}, lines); diff != "" {
				t.Errorf("failure line (-want +got):\n%s", diff)
			}
			var b strings.Builder
			suite.PrintFailures(&b, lines)
			printed := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if diff := cmp.Diff(tt.printed, printed); diff != "" {
				t.Errorf("printed (-want +got):\n%s", diff)
			}
			for _, l := range printed {
				if utf8.RuneCountInString(l) > suite.LineWidth {
					t.Errorf("printed line of %d runes: %q", utf8.RuneCountInString(l), l)
				}
			}
		})
	}
}
