package durability

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wr "idemlab/worker/redelivery"
)

// handMade is a derived result built by hand: every trial ok but the
// outcomes in odd, keyed "condition point".
func handMade(tb testing.TB, st Settings, odd map[string]string) results.ScenarioResult {
	tb.Helper()
	exp, err := Scenario{}.Expect(st)
	if err != nil {
		tb.Fatal(err)
	}
	res := results.ScenarioResult{Name: Name, Pass: true}
	for i, c := range st.Conditions {
		obs := map[string]Trial{}
		for _, pt := range append([]string{PointACK}, Points(c.Pattern, st.Items)...) {
			obs[pt] = Trial{Outcome: OutcomeOK}
			if o, ok := odd[c.Name+" "+pt]; ok {
				obs[pt] = Trial{Outcome: o}
			}
		}
		res.Conditions = append(res.Conditions, results.ConditionResult{Name: c.Name, Expected: scenario.Marshal(exp[i].Value), Observed: scenario.Marshal(obs)})
	}
	return res
}

func TestLead(t *testing.T) {
	st, err := settingsOf(Input{Patterns: []string{PatternSeparate, PatternSingle}, JournalModes: []string{"DELETE", "WAL"}, Synchronous: []string{"NORMAL", "EXTRA"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	odd := map[string]string{
		"redelivery-single/DELETE/NORMAL/power ack":       TagLostAcked,
		"redelivery-separate/DELETE/NORMAL/power ack":     TagLostAcked + "+" + TagDuplicate,
		"redelivery-single/WAL/NORMAL/power after-commit": TagRolledBack,
		"redelivery-single/WAL/EXTRA/kill after-commit":   TagDuplicate,
	}
	for _, c := range st.Conditions {
		if c.Pattern == PatternSeparate {
			odd[c.Name+" "+wr.PointAfterJobCommit] = TagDuplicate
		}
	}
	got := Lead(st, handMade(t, st, odd))
	twice := " does work twice (two jobs, a send accepted twice, or two claim winners in one TTL): "
	want := []string{
		"1 of the 64 trials ended outside the durability model's allowed outcomes: redelivery-single/WAL/EXTRA/kill after-commit.",
		"A power cut loses ACKed work under DELETE/NORMAL: redelivery-separate at ack; redelivery-single at ack.",
		"redelivery-separate" + twice + "at after-job-commit after a process kill or a power cut under every setting; at ack after a power cut under DELETE/NORMAL.",
		"redelivery-single" + twice + "at after-commit after a process kill under WAL/EXTRA.",
		"redelivery-separate is safe under no setting tried.",
		"redelivery-single is safe under DELETE/EXTRA and WAL/NORMAL: killed or power-cut at every point, nothing was lost, done twice or left missing (at most a crashed worker's commit rolled back and was redone).",
	}
	var texts []string
	for _, s := range got {
		texts = append(texts, s.Text)
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
	cells := map[string][]string{}
	for _, s := range got {
		cells[s.Text] = s.Cells
	}
	if diff := cmp.Diff([]string{"redelivery-separate/DELETE/NORMAL/power ack", "redelivery-single/DELETE/NORMAL/power ack"}, cells[want[1]]); diff != "" {
		t.Errorf("cells of the lost-ACK sentence (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"redelivery-single/DELETE/EXTRA/kill", "redelivery-single/DELETE/EXTRA/power", "redelivery-single/WAL/NORMAL/kill", "redelivery-single/WAL/NORMAL/power"}, cells[want[5]]); diff != "" {
		t.Errorf("cells of the safe sentence (-want +got):\n%s", diff)
	}
}

// TestLeadGroupsSettings: settings that lose ACKed work at the same points
// share a sentence, and a setting that loses it elsewhere gets its own.
func TestLeadGroupsSettings(t *testing.T) {
	st, err := settingsOf(Input{Patterns: []string{PatternSingle}, Kinds: []string{KindPower}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	odd := map[string]string{
		"redelivery-single/DELETE/NORMAL/power ack": TagLostAcked,
		"redelivery-single/DELETE/FULL/power ack":   TagLostAcked,
		"redelivery-single/DELETE/OFF/power ack":    TagLostAcked,
		"redelivery-single/WAL/OFF/power ack":       TagCorrupt + "+" + TagLostAcked,
	}
	var texts []string
	for _, s := range Lead(st, handMade(t, st, odd)) {
		texts = append(texts, s.Text)
	}
	want := []string{
		"Every one of the 32 trials ended as the durability model predicts; every loss and duplicate below is one it predicts.",
		"A power cut loses ACKed work under DELETE/OFF, DELETE/NORMAL, DELETE/FULL and WAL/OFF: redelivery-single at ack.",
		"redelivery-single leaves a file that fails integrity_check: at ack after a power cut under WAL/OFF.",
		"redelivery-single is safe under DELETE/EXTRA, WAL/NORMAL, WAL/FULL and WAL/EXTRA: killed or power-cut at every point, nothing was lost, done twice or left missing (at most a crashed worker's commit rolled back and was redone).",
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
}
