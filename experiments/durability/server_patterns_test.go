package durability

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	wb "idemlab/worker/batch"
)

// TestMayHoldOnServer checks when the batch's resume opens a journal
// holding a notify IN_FLIGHT on PostgreSQL: after a kill at either send
// point, and never after a crash under off, which takes back the mark.
func TestMayHoldOnServer(t *testing.T) {
	cond := func(sc, k string) Condition {
		return Condition{Name: ServerConditionName(PatternBatch, sc, k), Pattern: PatternBatch, SynchronousCommit: sc, Kind: k}
	}
	tests := []struct {
		c     Condition
		point string
		want  bool
	}{
		{cond("off", KindKill), wb.ItemPoint(wb.PointBeforeSend, wb.ItemID(2)), true},
		{cond("on", KindServer), wb.ItemPoint(wb.PointAfterSendAccepted, wb.ItemID(1)), true},
		{cond("off", KindServer), wb.ItemPoint(wb.PointAfterSendAccepted, wb.ItemID(1)), false},
		{cond("on", KindServer), PointACK, false},
	}
	for _, tt := range tests {
		got, err := mayHoldOnServer(tt.c, 2, tt.point)
		if err != nil || got != tt.want {
			t.Errorf("%s %s: %v, %v; want %v", tt.c.Name, tt.point, got, err, tt.want)
		}
	}
}

// TestPostgresServerCrashBatchClaim runs the server kind of the batch
// journal and the TTL claim under synchronous_commit on and off on a real
// throwaway cluster, with real workers and the real receiver, and reaches
// the verdict as verify does. The oracle passes it; told that off loses
// nothing, it fails exactly the off conditions; tampered records fail.
func TestPostgresServerCrashBatchClaim(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	ov := map[string]string{FlagKind: KindServer, FlagPattern: PatternBatch + "," + PatternClaim, FlagSynchronousCommits: "on,off", FlagItems: "1"}
	out := runOnServer(t, ov)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	// The oracle, not this test, says what each trial loses; this only
	// makes sure the run exercised what the patterns are judged by: a
	// send the receiver accepted twice, and a probe that won inside the
	// TTL.
	batchOff, _ := trialAt(t, out.Records, ServerConditionName(PatternBatch, "off", KindServer), PointACK)
	if n := acceptedTwice(batchOff.Sends); n == 0 {
		t.Errorf("no send accepted twice after the crash under off: %+v", batchOff.Sends)
	}
	claimOff, claimLine := trialAt(t, out.Records, ServerConditionName(PatternClaim, "off", KindServer), PointACK)
	if len(claimOff.Server.Lost[TableClaims]) != 1 {
		t.Errorf("the claim row was not lost under off: %+v", claimOff.Server)
	}

	t.Run("oracle told off loses nothing fails", func(t *testing.T) {
		res := scenario.Evaluate(scenario.Define[Settings, Extra](offKeeps{}), ov, out.Settings, out.Records)
		if fs := res.AllFindings(); len(fs) > 0 {
			t.Fatalf("findings: %v", fs)
		}
		for _, c := range res.Conditions {
			if off := strings.Contains(c.Name, "/off/"); c.Pass == off {
				t.Errorf("%s: pass %v", c.Name, c.Pass)
			}
		}
	})
	probe := processIndex(t, out.Records, claimOff.Steps[1].ProcessID)
	_, batchLine := trialAt(t, out.Records, ServerConditionName(PatternBatch, "off", KindServer), PointACK)
	tampers := []struct {
		name   string
		obs    bool
		index  int
		edit   func(m map[string]any)
		inText string
	}{
		{"second acceptance dropped from the receiver's log", true, batchLine, func(m map[string]any) {
			var kept []any
			seen := map[string]bool{}
			for _, e := range m["sends"].([]any) {
				k := e.(map[string]any)["item_id"].(string)
				if !seen[k] {
					kept = append(kept, e)
				}
				seen[k] = true
			}
			m["sends"] = kept
		}, "outcome"},
		{"claim's lost row dropped", true, claimLine, func(m map[string]any) { m["server"].(map[string]any)["lost_rows"] = map[string]any{} }, "server.lost_rows"},
		{"claim row kept through the crash", true, claimLine, func(m map[string]any) { m["after"] = m["before"] }, "server.lost_rows"},
		{"probe says it lost", false, probe, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"won":true`, `"won":false`, 1)
		}, "probe"},
	}
	for _, tt := range tampers {
		t.Run("tamper "+tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, out.Records, tt.obs, tt.index, tt.edit)
			res := scenario.Evaluate(New(), ov, out.Settings, rec)
			if res.Pass {
				t.Fatal("the tampered records pass")
			}
			var said []string
			for _, f := range res.AllFindings() {
				said = append(said, f.String())
			}
			for _, c := range res.Conditions {
				for _, d := range c.Differences {
					said = append(said, d.Path)
				}
			}
			if !slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, tt.inText) }) {
				t.Errorf("nothing mentions %q; got %v", tt.inText, said)
			}
		})
	}
}

// trialAt finds the trial of condition c at point among the records, and
// its line's index.
func trialAt(tb testing.TB, rec results.Records, c, point string) (Observation, int) {
	tb.Helper()
	for i, l := range rec.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			tb.Fatal(err)
		}
		if o.Condition == c && o.Point == point {
			return o, i
		}
	}
	tb.Fatalf("no trial of %s at %s", c, point)
	return Observation{}, 0
}

// processIndex is the index among the records of process id.
func processIndex(tb testing.TB, rec results.Records, id int) int {
	tb.Helper()
	i := slices.IndexFunc(rec.Processes, func(p results.Process) bool { return p.ID == id })
	if i < 0 {
		tb.Fatalf("no process %d", id)
	}
	return i
}

// acceptedTwice counts the sends the receiver's log shows accepted more
// than once.
func acceptedTwice(sends []receiver.Entry) int {
	n := map[string]int{}
	for _, e := range sends {
		if e.Accepted() {
			n[e.Job+":"+e.Item+":"+e.Step]++
		}
	}
	twice := 0
	for _, c := range n {
		if c > 1 {
			twice++
		}
	}
	return twice
}

// TestStableRows checks that only a claim's claimed_at is marked in the
// lost rows a trial derives, and that the input is left as read.
func TestStableRows(t *testing.T) {
	in := Rows{
		TableClaims:  {"fp|1|1796145112832|review|ext-delivery", "fp|1|||"},
		TableJournal: {"job|item-001|notify_external|SUCCEEDED|rcpt-1"},
	}
	want := Rows{
		TableClaims:  {"fp|1|" + ClaimedAtMark + "|review|ext-delivery", "fp|1|||"},
		TableJournal: {"job|item-001|notify_external|SUCCEEDED|rcpt-1"},
	}
	if diff := cmp.Diff(want, StableRows(in)); diff != "" {
		t.Errorf("StableRows (-want +got):\n%s", diff)
	}
	if in[TableClaims][0] != "fp|1|1796145112832|review|ext-delivery" {
		t.Errorf("the input changed: %v", in)
	}
}
