package durability

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/experiments/suite"
	"idemlab/worker"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

func TestMain(m *testing.M) { worker.TestMain(m, breaks) }

// slice is the small matrix of the real-process test: the single
// transaction under WAL and DELETE with NORMAL and EXTRA, power cuts only.
var slice = map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "DELETE,WAL", FlagSynchronous: "NORMAL,EXTRA", FlagKind: KindPower}

func run(tb testing.TB) scenariotest.Outcome {
	tb.Helper()
	out := scenariotest.Run(tb, New(), "", slice)
	if len(out.Findings) > 0 {
		tb.Fatalf("a fresh run has findings: %v", out.Findings)
	}
	return out
}

func observed(tb testing.TB, out scenariotest.Outcome) map[string]string {
	tb.Helper()
	got := map[string]string{}
	for _, c := range out.Result.Conditions {
		var obs map[string]Trial
		if err := json.Unmarshal(c.Observed, &obs); err != nil {
			tb.Fatal(err)
		}
		for pt, t := range obs {
			got[c.Name+" "+pt] = t.Outcome
		}
	}
	return got
}

// TestRealSlice runs the slice with real processes and real power-cut
// recovery, and checks the outcomes the issue predicts: WAL+NORMAL rolls
// back a crashed commit but keeps an ACKed one (the close checkpoints),
// DELETE+NORMAL loses even an ACKed commit through the returning journal,
// EXTRA loses nothing.
func TestRealSlice(t *testing.T) {
	out := run(t)
	if !out.Result.Pass {
		t.Fatalf("run failed: %+v", out.Result.Conditions)
	}
	want := map[string]string{}
	for _, mode := range []string{"DELETE", "WAL"} {
		for _, sync := range []string{"NORMAL", "EXTRA"} {
			name := ConditionName(PatternSingle, mode, sync, KindPower)
			for _, pt := range []string{PointACK, wr.PointAfterProcessedInsert, wr.PointBeforeCommit, wr.PointAfterCommit, PointACKOpen, PointACKReader} {
				want[name+" "+pt] = OutcomeOK
			}
		}
	}
	want["redelivery-single/DELETE/NORMAL/power ack"] = TagLostAcked
	want["redelivery-single/DELETE/NORMAL/power after-commit"] = TagRolledBack
	want["redelivery-single/WAL/NORMAL/power after-commit"] = TagRolledBack
	// With the connection left open, or the parent's reader open, no
	// close-time checkpoint saves WAL+NORMAL's ACKed commit.
	for _, pt := range []string{PointACKOpen, PointACKReader} {
		want["redelivery-single/DELETE/NORMAL/power "+pt] = TagLostAcked
		want["redelivery-single/WAL/NORMAL/power "+pt] = TagLostAcked
	}
	if diff := cmp.Diff(want, observed(t, out)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	var extra Extra
	if err := json.Unmarshal(out.Result.Extra, &extra); err != nil {
		t.Fatal(err)
	}
	if len(extra.Matrix.Rows) != 4 || len(extra.Matrix.Columns) != 6 {
		t.Errorf("matrix %d × %d, want 4 × 6", len(extra.Matrix.Rows), len(extra.Matrix.Columns))
	}
	sec, err := New().Report(out.Result)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Verdict != scenario.VerdictMatches {
		t.Errorf("verdict %q, want %q", sec.Verdict, scenario.VerdictMatches)
	}
	lost := "A power cut loses ACKed work under DELETE/NORMAL: redelivery-single at ack, ack-open, ack-reader."
	if len(sec.Lead) < 2 || sec.Lead[1].Text != lost {
		t.Errorf("lead %+v, want the second sentence %q", sec.Lead, lost)
	}
	for _, tb := range sec.Tables {
		for _, r := range tb.Rows {
			if w := len([]rune(strings.Join(r, "  "))); w > 100 {
				t.Errorf("table row %q is %d columns wide", r, w)
			}
		}
	}

	t.Run("wrong oracle fails", func(t *testing.T) {
		res := scenario.Evaluate(scenario.Define[Settings, Extra](neverLoses{}), slice, out.Settings, out.Records)
		findings := res.AllFindings()
		if len(findings) > 0 {
			t.Fatalf("findings: %v", findings)
		}
		for _, c := range res.Conditions {
			if failing := strings.Contains(c.Name, "NORMAL"); c.Pass == failing {
				t.Errorf("%s: pass %v", c.Name, c.Pass)
			}
		}
	})

	// Line 0 and processes 0 and 1 of DELETE/NORMAL are its normal run,
	// cut after the ACK; its line 3 and processes 6 and 7 its cut after
	// the commit. The conditions run side by side, so the index is the
	// condition's own (at), each condition's lines in its trials' order.
	tampers := []struct {
		name   string
		obs    bool
		index  int
		edit   func(m map[string]any)
		file   string
		inText string
	}{
		{"point renamed", true, 3, func(m map[string]any) { m["point"] = wr.PointBeforeCommit }, "observations.jsonl", "point"},
		{"recovery dropped", true, 3, func(m map[string]any) { delete(m, "recovery") }, "observations.jsonl", "recovery"},
		{"integrity emptied", true, 1, func(m map[string]any) { m["integrity"] = []any{} }, "observations.jsonl", "integrity"},
		{"final job of another event", true, 2, func(m map[string]any) {
			m["final"].(map[string]any)[TableJobs] = []any{"other|k"}
		}, "observations.jsonl", "final"},
		{"table dropped", true, 2, func(m map[string]any) { delete(m["after"].(map[string]any), TableProcessed) }, "observations.jsonl", "after"},
		{"steps swapped", true, 0, func(m map[string]any) {
			s := m["steps"].([]any)
			s[0], s[1] = s[1], s[0]
		}, "observations.jsonl", "steps"},
		{"VFS not set", false, 1, func(m map[string]any) { delete(m["env"].(map[string]any), protocol.EnvVFS) }, "raw-processes.jsonl", "env"},
		{"crash kind changed", false, 6, func(m map[string]any) { m["env"].(map[string]any)[protocol.EnvCrashKind] = KindKill }, "raw-processes.jsonl", "env"},
		{"argv pattern", false, 0, func(m map[string]any) { m["argv"].([]any)[6] = string(wr.SeparateCommit) }, "raw-processes.jsonl", "argv"},
		{"exit code", false, 6, func(m map[string]any) { m["exit_code"] = 0.0 }, "raw-processes.jsonl", "exit_code"},
		{"report crash kind", false, 6, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"crash_kind":"power"`, `"crash_kind":"kill"`, 1)
		}, "raw-processes.jsonl", "crash_kind"},
		{"logged deletion made durable", true, 0, func(m map[string]any) {
			for _, op := range m["log"].([]any) {
				if op := op.(map[string]any); op["op"] == faultvfs.OpDelete {
					op["dirsync"] = true
				}
			}
		}, "observations.jsonl", "recovery.files"},
		{"recovery decision changed", true, 0, func(m map[string]any) {
			for _, f := range m["recovery"].(map[string]any)["files"].([]any) {
				if f := f.(map[string]any); f["action"] == faultvfs.ActResurrect {
					f["action"] = faultvfs.ActRestore
				}
			}
		}, "observations.jsonl", "recovery.files"},
		{"log dropped", true, 3, func(m map[string]any) { delete(m, "log") }, "observations.jsonl", "log"},
		{"pragma read back", false, 0, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"synchronous":"NORMAL"`, `"synchronous":"FULL"`, 1)
		}, "raw-processes.jsonl", "read back"},
		// Every trial starts on a fresh folder (engine.Places): the cut
		// after the commit on the normal run's file is a finding.
		{"folder of another trial", true, 3, func(m map[string]any) { m["db"] = dbOf(t, out, at(t, out, true, 0)) }, "observations.jsonl", "every trial starts on a fresh folder"},
	}
	for _, tt := range tampers {
		t.Run("tamper "+tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, out.Records, tt.obs, at(t, out, tt.obs, tt.index), tt.edit)
			findings := scenario.Evaluate(New(), slice, out.Settings, rec).AllFindings()
			for _, f := range findings {
				if f.File == tt.file && strings.Contains(f.String(), tt.inText) {
					return
				}
			}
			t.Errorf("no finding in %s mentioning %q; got %v", tt.file, tt.inText, findings)
		})
	}
}

// neverLoses is the matrix with a wrong oracle: every trial ends ok, with
// the files the model says.
type neverLoses struct{ Scenario }

func (neverLoses) Expect(st Settings) ([]scenario.Expected, error) {
	out, err := Scenario{}.Expect(st)
	for _, e := range out {
		for k, w := range e.Value.(map[string]Want) {
			w.Outcome, w.RowsLost = OutcomeOK, 0
			e.Value.(map[string]Want)[k] = w
		}
	}
	return out, err
}

// TestOptIn checks that a run without --scenario skips the matrix and a
// run naming it gets it.
func TestOptIn(t *testing.T) {
	reg := scenario.Registry{New()}
	got, err := suite.Choose(reg, nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Choose(no names) = %v, %v; want nothing", got, err)
	}
	got, err = suite.Choose(reg, []string{Name})
	if err != nil || len(got) != 1 {
		t.Errorf("Choose(durability) = %v, %v; want the matrix", got, err)
	}
}

func TestPlanRefusesBadInput(t *testing.T) {
	tests := []struct {
		section   string
		overrides map[string]string
		want      string
	}{
		{`{"patterns": ["claim"]}`, nil, `durability.patterns: "claim" is not one of`},
		{`{"items": 9}`, nil, "durability.items 9"},
		{`{"kinds": ["kill", "kill"]}`, nil, "listed twice"},
		{`{"synchronus": ["FULL"]}`, nil, "durability.synchronus: unknown field"},
		{``, map[string]string{FlagSynchronous: "SOMETIMES"}, `--synchronous: "SOMETIMES" is not one of OFF, NORMAL, FULL, EXTRA`},
		{`{"synchronous": ["sometimes"]}`, nil, `durability.synchronous: "sometimes" is not one of`},
		{`{"synchronous": ["FULL"]}`, map[string]string{FlagJournalMode: "wal,WAL"}, `--journal-mode: "WAL" is listed twice`},
		{``, map[string]string{FlagPattern: "Batch-Journal"}, `--pattern: "Batch-Journal" is not one of`},
		{``, map[string]string{FlagItems: "0"}, "--items 0"},
	}
	for _, tt := range tests {
		_, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(tt.section), Overrides: tt.overrides})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%s, %v) = %v, want an error containing %q", tt.section, tt.overrides, err, tt.want)
		}
	}
}

// TestPlanAcceptsAnyCase: SQLite reads pragma values in any case, so the
// flags and the input do too, and the settings record them as SQLite's
// documentation spells them, byte for byte as if typed so.
func TestPlanAcceptsAnyCase(t *testing.T) {
	settings := func(section string, ov map[string]string) string {
		t.Helper()
		p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: ov})
		if err != nil {
			t.Fatalf("Plan(%s, %v): %v", section, ov, err)
		}
		return string(scenario.Marshal(p.Settings()))
	}
	want := settings(``, map[string]string{FlagJournalMode: "WAL", FlagSynchronous: "NORMAL,EXTRA"})
	for _, tt := range []struct {
		section string
		ov      map[string]string
	}{
		{``, map[string]string{FlagJournalMode: "wal", FlagSynchronous: "normal,Extra"}},
		{`{"journal_modes": ["Wal"], "synchronous": ["NORMAL", "extra"]}`, nil},
	} {
		if diff := cmp.Diff(want, settings(tt.section, tt.ov)); diff != "" {
			t.Errorf("Plan(%s, %v) settings (-canonical +got):\n%s", tt.section, tt.ov, diff)
		}
	}
}

// at is the index in the records of DELETE/NORMAL's observation (obs) or
// process line n.
func at(tb testing.TB, out scenariotest.Outcome, obs bool, n int) int {
	tb.Helper()
	cond := ConditionName(PatternSingle, "DELETE", "NORMAL", KindPower)
	var conds []string
	if obs {
		for _, l := range out.Records.Observations {
			conds = append(conds, l.Condition)
		}
	} else {
		for _, p := range out.Records.Processes {
			conds = append(conds, p.Condition)
		}
	}
	for i, c := range conds {
		if c != cond {
			continue
		}
		if n == 0 {
			return i
		}
		n--
	}
	tb.Fatalf("%s has no line %d", cond, n)
	return -1
}

// dbOf is the database an observation line of the run names.
func dbOf(tb testing.TB, out scenariotest.Outcome, line int) string {
	tb.Helper()
	var o Observation
	if err := json.Unmarshal(out.Records.Observations[line].Raw, &o); err != nil {
		tb.Fatal(err)
	}
	return o.DB
}
