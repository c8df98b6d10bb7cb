package durability

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// handMade is a derived result built by hand: every trial as the model
// wants it, but the outcomes in odd, keyed "condition trial".
func handMade(tb testing.TB, st Settings, odd map[string]string) results.ScenarioResult {
	tb.Helper()
	exp, err := Scenario{}.Expect(st)
	if err != nil {
		tb.Fatal(err)
	}
	res := results.ScenarioResult{Name: Name, Pass: true}
	for i, c := range st.Conditions {
		obs := map[string]Trial{}
		for k, w := range exp[i].Value.(map[string]Want) {
			obs[k] = Trial{Outcome: w.Outcome, RowsLost: w.RowsLost, Recovered: w.Recovered}
			if o, ok := odd[c.Name+" "+k]; ok {
				obs[k] = Trial{Outcome: o, RowsLost: w.RowsLost, Recovered: w.Recovered}
			}
		}
		res.Conditions = append(res.Conditions, results.ConditionResult{Name: c.Name, Expected: scenario.Marshal(exp[i].Value), Observed: scenario.Marshal(obs)})
	}
	return res
}

func TestLead(t *testing.T) {
	st, err := settingsOf(backend.SQLite, Input{Patterns: []string{PatternSeparate, PatternSingle}, JournalModes: []string{"DELETE", "WAL"}, Synchronous: []string{"NORMAL", "EXTRA"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The model's own outcomes give the losses and duplicates; one trial
	// ends otherwise.
	odd := map[string]string{"redelivery-single/WAL/EXTRA/kill after-commit": TagDuplicate}
	got := Lead(st, handMade(t, st, odd))
	twice := " does work twice (two jobs, a send accepted twice, or two claim winners in one TTL): "
	want := []string{
		"1 of the 96 trials ended outside the durability model's allowed outcomes: redelivery-single/WAL/EXTRA/kill after-commit.",
		"A power cut loses ACKed work under DELETE/NORMAL: redelivery-separate at ack, ack-open, ack-reader; redelivery-single at ack, ack-open, ack-reader.",
		"A power cut loses ACKed work under WAL/NORMAL: redelivery-separate at ack-open, ack-reader; redelivery-single at ack-open, ack-reader.",
		"redelivery-separate" + twice + "at after-job-commit after a process kill under every setting, and after a power cut under DELETE/EXTRA and WAL/EXTRA; at ack, after-processed-commit, ack-open and ack-reader after a power cut under DELETE/NORMAL.",
		"redelivery-single" + twice + "at after-commit after a process kill under WAL/EXTRA.",
		"redelivery-separate is safe under no setting tried.",
		"redelivery-single is safe under DELETE/EXTRA: killed or power-cut at every point, nothing was lost, done twice or left missing (at most a crashed worker's commit rolled back and was redone).",
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
	lostCells := []string{"redelivery-separate/DELETE/NORMAL/power ack", "redelivery-separate/DELETE/NORMAL/power ack-open", "redelivery-separate/DELETE/NORMAL/power ack-reader",
		"redelivery-single/DELETE/NORMAL/power ack", "redelivery-single/DELETE/NORMAL/power ack-open", "redelivery-single/DELETE/NORMAL/power ack-reader"}
	if diff := cmp.Diff(lostCells, cells[want[1]]); diff != "" {
		t.Errorf("cells of the lost-ACK sentence (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"redelivery-single/DELETE/EXTRA/kill", "redelivery-single/DELETE/EXTRA/power"}, cells[want[6]]); diff != "" {
		t.Errorf("cells of the safe sentence (-want +got):\n%s", diff)
	}
}

// TestLeadGroupsSettings: settings that lose ACKed work at the same points
// share a sentence, and a setting that loses it elsewhere gets its own.
func TestLeadGroupsSettings(t *testing.T) {
	st, err := settingsOf(backend.SQLite, Input{Patterns: []string{PatternSingle}, Kinds: []string{KindPower}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	odd := map[string]string{"redelivery-single/WAL/OFF/power ack": TagCorrupt + "+" + TagLostAcked}
	var texts []string
	for _, s := range Lead(st, handMade(t, st, odd)) {
		texts = append(texts, s.Text)
	}
	want := []string{
		"1 of the 48 trials ended outside the durability model's allowed outcomes: redelivery-single/WAL/OFF/power ack.",
		"A power cut loses ACKed work under DELETE/OFF, DELETE/NORMAL, DELETE/FULL and WAL/OFF: redelivery-single at ack, ack-open, ack-reader.",
		"A power cut loses ACKed work under WAL/NORMAL: redelivery-single at ack-open, ack-reader.",
		"redelivery-single leaves a file that fails integrity_check: at ack after a power cut under WAL/OFF.",
		"redelivery-single is safe under DELETE/EXTRA, WAL/FULL and WAL/EXTRA: killed or power-cut at every point, nothing was lost, done twice or left missing (at most a crashed worker's commit rolled back and was redone).",
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
}
