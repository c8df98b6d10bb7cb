package durability

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/faultvfs"
)

// failing lists the conditions of a result that did not pass.
func failing(res results.ScenarioResult) []string {
	var out []string
	for _, c := range res.Conditions {
		if !c.Pass {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestBrokenCutsFail runs a slice with a recovery broken on purpose, a
// switch the oracle knows nothing of: a cut that restores nothing, and a
// cut that drops synced data. Each must fail exactly the conditions where
// the broken cut ends otherwise than the real one, with no finding about
// the records, since the report still lists the plan the log calls for.
func TestBrokenCutsFail(t *testing.T) {
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "DELETE,WAL", FlagSynchronous: "NORMAL,EXTRA", FlagKind: KindPower}
	tests := []struct {
		name string
		brk  faultvfs.Break
		want []string
	}{
		// Only a cut that the model says loses something can show a cut
		// that restores nothing: DELETE/NORMAL loses the ACKed commit,
		// WAL/NORMAL a crashed or ACK-open one.
		{"restores nothing", faultvfs.BreakNoRestore, []string{
			"redelivery-single/DELETE/NORMAL/power", "redelivery-single/WAL/NORMAL/power"}},
		// Every setting but DELETE/NORMAL keeps some synced commit, which
		// this cut drops; DELETE/NORMAL loses the one commit at every
		// point anyway, through the journal that comes back.
		{"drops synced data", faultvfs.BreakDropSynced, []string{
			"redelivery-single/DELETE/EXTRA/power", "redelivery-single/WAL/NORMAL/power", "redelivery-single/WAL/EXTRA/power"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			undo := faultvfs.SetBreakForTest(tt.brk)
			out := scenariotest.Run(t, New(), "", flags)
			undo()
			if len(out.Findings) > 0 {
				t.Errorf("findings about the records: %v", out.Findings)
			}
			if out.Result.Pass {
				t.Fatal("the run passed")
			}
			if got := failing(out.Result); !slices.Equal(got, tt.want) {
				t.Errorf("failing conditions %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTornSlice runs the torn mode on WAL+NORMAL and DELETE+OFF with real
// processes, checks it matches the model, and tampers with one torn
// decision, one seed and one logged op: each fails the evaluation naming
// the file and the field.
func TestTornSlice(t *testing.T) {
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "WAL", FlagSynchronous: "NORMAL", FlagKind: KindPower,
		FlagFault: faultvfs.FaultTorn, FlagFaultSeeds: "3", FlagSeed: "7"}
	out := scenariotest.Run(t, New(), "", flags)
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("findings %v, pass %v: %+v", out.Findings, out.Result.Pass, out.Result.Conditions)
	}
	var obs map[string]Trial
	if err := json.Unmarshal(out.Result.Conditions[0].Observed, &obs); err != nil {
		t.Fatal(err)
	}
	if len(obs) != 6*3 {
		t.Errorf("%d trials, want 6 points × 3 seeds", len(obs))
	}
	// Trial 4 × 3 is ack-open with seed 0: its WAL's frames were never
	// synced, so the seed decided them.
	line := 4 * 3
	var o Observation
	if err := json.Unmarshal(out.Records.Observations[line].Raw, &o); err != nil {
		t.Fatal(err)
	}
	if o.Point != PointACKOpen || o.Recovery == nil || len(o.Recovery.Torn) != 1 {
		t.Fatalf("line %d is %s with torn decisions %+v, want ack-open's with the WAL's", line, o.Point, o.Recovery)
	}
	tampers := []struct {
		name, field string
		edit        func(m map[string]any)
	}{
		{"decision", "recovery.torn[0].decisions", func(m map[string]any) {
			tf := m["recovery"].(map[string]any)["torn"].([]any)[0].(map[string]any)
			d := []byte(tf["decisions"].(string))
			d[0] = map[byte]byte{'k': 'd', 'd': 'g', 'g': 'k'}[d[0]]
			tf["decisions"] = string(d)
		}},
		{"seed", "recovery.seed", func(m map[string]any) { m["recovery"].(map[string]any)["seed"] = 99.0 }},
		{"logged op", "recovery.torn[0]", func(m map[string]any) {
			// The last write the log published: its range shrinks.
			log := m["log"].([]any)
			for i := len(log) - 1; i >= 0; i-- {
				if op := log[i].(map[string]any); op["op"] == faultvfs.OpWrite {
					op["spans"] = []any{[]any{32.0, 40.0}}
					return
				}
			}
		}},
	}
	for _, tt := range tampers {
		t.Run("tamper "+tt.name, func(t *testing.T) {
			requireObsFinding(t, out, flags, line, tt.field, tt.edit)
		})
	}
}

// TestSyncPointSlice sweeps the cuts inside every sync of DELETE+FULL and
// WAL+FULL, killed and power-cut, for the separate commits and the claim,
// and checks every trial ends as the model says, which needs its sync
// schedule to be SQLite's. A cut inside the claim's WAL commit leaves the
// claim in the file before its point is passed, which the claim's checks
// must allow.
func TestSyncPointSlice(t *testing.T) {
	flags := map[string]string{FlagPattern: PatternSeparate + "," + PatternClaim, FlagJournalMode: "DELETE,WAL", FlagSynchronous: "FULL", FlagSyncPoints: "true"}
	out := scenariotest.Run(t, New(), "", flags)
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("findings %v, pass %v: %+v", out.Findings, out.Result.Pass, out.Result.Conditions)
	}
	// Six syncs under DELETE/FULL, five under WAL/FULL, each cut before
	// and after, on top of the six other points of either pattern: 18 and
	// 16 trials.
	for _, c := range out.Result.Conditions {
		var obs map[string]Trial
		if err := json.Unmarshal(c.Observed, &obs); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"DELETE": 18, "WAL": 16}[strings.Split(c.Name, "/")[1]]
		if len(obs) != want {
			t.Errorf("%s: %d trials, want %d", c.Name, len(obs), want)
		}
	}
}

func TestFaultFlagsRefused(t *testing.T) {
	tests := []struct {
		section   string
		overrides map[string]string
		want      string
	}{
		{``, map[string]string{FlagFault: "shred"}, `--fault: "shred" is not one of drop, keep, torn`},
		{``, map[string]string{FlagFaultSeeds: "4"}, `--fault-seeds: only with fault "torn"`},
		{``, map[string]string{FlagFault: "torn", FlagFaultSeeds: "0"}, "--fault-seeds 0: want 1 to 64"},
		{``, map[string]string{FlagFault: "torn", FlagFaultUnit: "1000"}, "--fault-unit 1000: want 512 or 4096"},
		{``, map[string]string{FlagFault: "torn", FlagSeed: "-1"}, `--seed "-1"`},
		{`{"fault": "torn", "fault_unit": 1024}`, nil, "durability.fault_unit 1024: want 512 or 4096"},
		{``, map[string]string{FlagSyncPoints: "maybe"}, `--sync-points "maybe"`},
	}
	for _, tt := range tests {
		_, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(tt.section), Overrides: tt.overrides})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%s, %v) = %v, want an error containing %q", tt.section, tt.overrides, err, tt.want)
		}
	}
}

// requireObsFinding edits observation line of out's records and checks
// that the fold, run as verify runs it, names field in a finding of
// observations.jsonl.
func requireObsFinding(t *testing.T, out scenariotest.Outcome, flags map[string]string, line int, field string, edit func(m map[string]any)) {
	t.Helper()
	rec := scenariotest.Edit(t, out.Records, true, line, edit)
	findings := scenario.Evaluate(New(), flags, out.Settings, rec).AllFindings()
	if !slices.ContainsFunc(findings, func(f results.Finding) bool {
		return f.File == "observations.jsonl" && strings.Contains(f.String(), field)
	}) {
		t.Errorf("no finding in observations.jsonl naming %s; got %v", field, findings)
	}
}
