package durability

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
)

// claimRows is a claim file holding row, or none when row is "".
func claimRows(row string) Rows {
	r := Rows{TableClaims: []string{}}
	if row != "" {
		r[TableClaims] = append(r[TableClaims], row)
	}
	return r
}

// TestClassifyClaim classifies hand-made claim histories: the claim taken
// at 1000 ms, a probe inside the TTL, a re-claim after it.
func TestClassifyClaim(t *testing.T) {
	const (
		done      = "fp|1|1000|k|ext-delivery"
		claimed   = "fp|1|1000||"
		byReclaim = "fp|2|61500|k|ext-reclaim"
		byProbe   = "fp|2|61500|k|ext-probe"
	)
	tests := []struct {
		name     string
		f        Facts
		want     string
		wantLost int
	}{
		{"ACKed and kept; the re-claim finds it done", Facts{FirstExit: 0, Before: claimRows(done), After: claimRows(done), Final: claimRows("fp|2|61500|k|ext-delivery"), Wins: []int64{61500}}, OutcomeOK, 0},
		{"crashed before claiming; the probe does the work", Facts{FirstExit: 17, Before: claimRows(""), After: claimRows(""), Final: claimRows(byProbe), Wins: []int64{1200, 61500}, FollowUps: []string{"ext-probe"}}, OutcomeOK, 0},
		{"ACKed claim lost: the probe wins inside the TTL", Facts{FirstExit: 0, Before: claimRows(done), After: claimRows(""), Final: claimRows(byProbe), Wins: []int64{1200, 61500}, FollowUps: []string{"ext-probe"}},
			"lost-acked+lost-claim+lost-downstream+duplicate", 1},
		{"ACKed downstream lost: the re-claim redoes it", Facts{FirstExit: 0, Before: claimRows(done), After: claimRows(claimed), Final: claimRows(byReclaim), Wins: []int64{61500}, FollowUps: []string{"ext-reclaim"}},
			"lost-acked+lost-downstream", 1},
		{"crashed claim rolled back", Facts{FirstExit: 17, Before: claimRows(claimed), After: claimRows(""), Final: claimRows(byProbe), Wins: []int64{1200, 61500}, FollowUps: []string{"ext-probe"}},
			"rolled-back+lost-claim+duplicate", 1},
		{"a later winner overwrites kept fields", Facts{FirstExit: 0, Before: claimRows(done), After: claimRows(done), Final: claimRows(byReclaim), Wins: []int64{61500}, FollowUps: []string{"ext-reclaim"}},
			TagLostDownstream, 0},
		{"a second winner though the claim held", Facts{FirstExit: 17, Before: claimRows(claimed), After: claimRows(claimed), Final: claimRows(byProbe), Wins: []int64{1200, 61500}, FollowUps: []string{"ext-probe"}},
			TagDuplicate, 0},
		{"never done, a later worker failed", Facts{FirstExit: 17, Before: claimRows(claimed), After: claimRows(claimed), Final: claimRows("fp|2|61500||"), Wins: []int64{61500}, LaterExits: []int{0, 3}},
			"missing+error", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Pattern, tt.f.Integrity = PatternClaim, []string{"ok"}
			got, n := Classify(tt.f)
			if got != tt.want || n != tt.wantLost {
				t.Errorf("Classify = %q, %d rows lost; want %q, %d", got, n, tt.want, tt.wantLost)
			}
		})
	}
}

// TestWantClaim checks the oracle's claim cells: a lost claim always
// brings a second winner inside the TTL.
func TestWantClaim(t *testing.T) {
	power := func(mode, sync string) Setting { return Setting{JournalMode: mode, Synchronous: sync, Kind: KindPower} }
	tests := []struct {
		point string
		s     Setting
		want  string
	}{
		{PointACK, power("DELETE", "FULL"), "lost-acked+lost-downstream"},
		{PointACK, power("WAL", "NORMAL"), OutcomeOK},
		{PointACKOpen, power("WAL", "NORMAL"), "lost-acked+lost-claim+lost-downstream+duplicate"},
		{PointACK, power("WAL", "OFF"), "lost-acked+lost-claim+lost-downstream+duplicate"},
		{we.PointClaimSchema, power("WAL", "NORMAL"), OutcomeOK},
		{we.PointClaimed, power("WAL", "NORMAL"), "rolled-back+lost-claim+duplicate"},
		{we.PointClaimFollowUp, power("DELETE", "NORMAL"), "rolled-back+lost-downstream"},
		{we.PointClaimFollowUp, Setting{JournalMode: "WAL", Synchronous: "OFF", Kind: KindKill}, OutcomeOK},
		{we.PointClaimFollowUp, power("DELETE", "EXTRA"), OutcomeOK},
	}
	for _, tt := range tests {
		t.Run(tt.s.JournalMode+"/"+tt.s.Synchronous+"/"+tt.s.Kind+"/"+tt.point, func(t *testing.T) {
			got, err := WantOf(PatternClaim, tt.s, 1, tt.point, faultvfs.FaultDrop)
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != tt.want {
				t.Errorf("WantOf = %q, want %q", got.Outcome, tt.want)
			}
		})
	}
}

// TestRealClaimSlice runs the claim with real processes and power cuts
// under WAL/NORMAL, where a crashed delivery's claim and fields may go, and
// DELETE/EXTRA, where nothing may, and tampers with the WAL/NORMAL records.
func TestRealClaimSlice(t *testing.T) {
	points := []string{PointACK, we.PointClaimSchema, we.PointClaimed, we.PointClaimFollowUp, PointACKOpen, PointACKReader}
	lostAll := "lost-acked+lost-claim+lost-downstream+duplicate"
	tests := []struct {
		mode, sync string
		want       map[string]string // point → outcome; the rest ok
	}{
		{"WAL", "NORMAL", map[string]string{
			we.PointClaimed:       "rolled-back+lost-claim+duplicate",
			we.PointClaimFollowUp: "rolled-back+lost-claim+lost-downstream+duplicate",
			PointACKOpen:          lostAll,
			PointACKReader:        lostAll,
		}},
		{"DELETE", "EXTRA", nil},
	}
	var walNormal scenariotest.Outcome
	var walFlags map[string]string
	for _, tt := range tests {
		flags := map[string]string{FlagPattern: PatternClaim, FlagJournalMode: tt.mode, FlagSynchronous: tt.sync, FlagKind: KindPower}
		out := scenariotest.Run(t, New(), "", flags)
		if len(out.Findings) > 0 {
			t.Fatalf("%s/%s: a fresh run has findings: %v", tt.mode, tt.sync, out.Findings)
		}
		if !out.Result.Pass {
			t.Errorf("%s/%s: run failed: %+v", tt.mode, tt.sync, out.Result.Conditions)
		}
		name := ConditionName(PatternClaim, tt.mode, tt.sync, KindPower)
		want := map[string]string{}
		for _, pt := range points {
			want[name+" "+pt] = OutcomeOK
			if o, ok := tt.want[pt]; ok {
				want[name+" "+pt] = o
			}
		}
		if diff := cmp.Diff(want, observed(t, out)); diff != "" {
			t.Errorf("%s/%s outcomes (-want +got):\n%s", tt.mode, tt.sync, diff)
		}
		if tt.mode == "WAL" {
			walNormal, walFlags = out, flags
		}
	}
	if walFlags == nil {
		t.Fatal("no WAL/NORMAL run")
	}

	// Lines 0-3 are the trials ack, schema-ready, claimed, followed-up;
	// processes 3k, 3k+1, 3k+2 are trial k's delivery, probe and re-claim.
	tampers := []struct {
		name   string
		obs    bool
		index  int
		edit   func(m map[string]any)
		file   string
		inText string
	}{
		{"probe's win denied", false, 7, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"won":true`, `"won":false`, 1)
		}, "raw-processes.jsonl", "won false"},
		{"holder renamed", false, 1, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"holder":"probe"`, `"holder":"reclaim"`, 1)
		}, "raw-processes.jsonl", "holder"},
		{"re-claim's clock not shifted", false, 2, func(m map[string]any) {
			argv := m["argv"].([]any)
			argv[len(argv)-1] = "0"
		}, "raw-processes.jsonl", "argv"},
		{"delivery's fields said lost", false, 0, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"followed_up":true`, `"followed_up":false`, 1)
		}, "raw-processes.jsonl", "followed up false"},
		{"final fields of nobody", true, 0, func(m map[string]any) {
			f := m["final"].(map[string]any)[TableClaims].([]any)
			f[0] = strings.Replace(f[0].(string), "ext-delivery", "ext-someone", 1)
		}, "observations.jsonl", "ext-someone"},
		{"crashed delivery's claim hidden", true, 3, func(m map[string]any) {
			m["before"].(map[string]any)[TableClaims] = []any{}
		}, "raw-processes.jsonl", "passed"},
		{"two claim rows", true, 2, func(m map[string]any) {
			a := m["final"].(map[string]any)[TableClaims].([]any)
			m["final"].(map[string]any)[TableClaims] = append(a, a[0])
		}, "observations.jsonl", "2 claim rows"},
		{"probe and re-claim swapped", true, 1, func(m map[string]any) {
			s := m["steps"].([]any)
			s[1], s[2] = s[2], s[1]
		}, "observations.jsonl", "roles"},
	}
	for _, tt := range tampers {
		t.Run("tamper "+tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, walNormal.Records, tt.obs, tt.index, tt.edit)
			findings := scenario.Evaluate(New(), walFlags, walNormal.Settings, rec).AllFindings()
			for _, f := range findings {
				if f.File == tt.file && strings.Contains(f.String(), tt.inText) {
					return
				}
			}
			t.Errorf("no finding in %s mentioning %q; got %v", tt.file, tt.inText, findings)
		})
	}

	var extra Extra
	if err := json.Unmarshal(walNormal.Result.Extra, &extra); err != nil {
		t.Fatal(err)
	}
	if got := extra.Matrix.Columns; len(got) != len(points) || got[0] != PatternClaim+"/"+PointACK {
		t.Errorf("matrix columns %q, want the claim's %d points", got, len(points))
	}
}
