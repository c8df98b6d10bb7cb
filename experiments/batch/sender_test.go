package batch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/worker/wire"
)

// withSenders turns the recorded fixture (format 4, no tokens) into what
// this build records: each run's line names its token, the run's argv
// carries it in the receiver URL, and the receiver logged it with each
// of the run's sends.
func withSenders(tb testing.TB, fx fixture) fixture {
	tb.Helper()
	for _, l := range fx.obs {
		step := l["step"].(string)
		if !strings.HasPrefix(step, "run ") {
			continue
		}
		tok := "p" + strings.TrimPrefix(step, "run ")
		l["sender"] = tok
		for _, s := range l["sends"].([]any) {
			s.(map[string]any)["sender"] = tok
		}
	}
	for _, p := range fx.procs {
		_, run, ok := strings.Cut(p["label"].(string), " run ")
		if !ok {
			continue
		}
		argv := p["argv"].([]any)
		for i, a := range argv {
			if a == "-receiver" {
				argv[i+1] = wire.SenderURL(argv[i+1].(string), "p"+run)
			}
		}
	}
	return fx
}

// lateSend moves run 1's last send of cond into run 2's line, logged just
// after run 1 ended: a request the receiver logged after the parent had
// read its log and started the next run.
func lateSend(tb testing.TB, fx fixture, cond string) {
	tb.Helper()
	r1, r2 := fx.line(tb, cond, "run 1"), fx.line(tb, cond, "run 2")
	s1 := r1["sends"].([]any)
	last := s1[len(s1)-1].(map[string]any)
	r1["sends"] = s1[:len(s1)-1]
	last["at"] = fx.proc(tb, cond, "trial 1 run 2")["started_at"]
	r2["sends"] = append([]any{last}, r2["sends"].([]any)...)
}

func foldExtra(tb testing.TB, fx fixture) (Extra, []results.Finding) {
	tb.Helper()
	folded, findings := Scenario{}.Fold(fixtureSettings(tb), fx.records(tb))
	ex, _ := folded.Extra.(Extra)
	return ex, findings
}

// TestFoldCountsBySender folds the fixture as this build records it: a
// run's sends are the ones its token names, whichever line holds them.
// A send moved into the next run's line, as a request that landed late
// would be, is still its sender's and is listed as a late send; the same
// move without tokens (format 4) is charged by the time window to the run
// that was running, and gives findings.
func TestFoldCountsBySender(t *testing.T) {
	t.Run("clean with tokens", func(t *testing.T) {
		ex, findings := foldExtra(t, withSenders(t, loadFixture(t)))
		if len(findings) > 0 || len(ex.LateSends) > 0 {
			t.Fatalf("findings %v, late sends %v", findings, ex.LateSends)
		}
	})
	t.Run("a late send is its sender's", func(t *testing.T) {
		fx := withSenders(t, loadFixture(t))
		moved := fx.line(t, baRerun, "run 1")["sends"].([]any)
		last := moved[len(moved)-1].(map[string]any)
		lateSend(t, fx, baRerun)
		ex, findings := foldExtra(t, fx)
		if len(findings) > 0 {
			t.Fatalf("findings: %v", findings)
		}
		want := []receiver.LateSend{{
			Condition: baRerun, Trial: 1, Sender: "p1", Step: "run 1", Seq: int(last["seq"].(float64)),
			Item: last["item_id"].(string), Outcome: last["outcome"].(string), Note: receiver.NoteLateEnded,
		}}
		if diff := cmp.Diff(want, ex.LateSends); diff != "" {
			t.Errorf("late sends (-want +got):\n%s", diff)
		}
	})
	t.Run("format 4: the window charges it to the next run", func(t *testing.T) {
		fx := loadFixture(t)
		lateSend(t, fx, baRerun)
		_, findings := foldExtra(t, fx)
		if !hasFinding(findings, "stdout.result.executed_by_step.notify_external") || !hasFinding(findings, "stdout.points") {
			t.Errorf("findings %v, want each run's sends and points against the window's", findings)
		}
	})
}

// TestFoldSenderTampered: a send whose sender is no run of the trial, or a
// run's line that names another token, is a finding.
func TestFoldSenderTampered(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(tb testing.TB, fx fixture)
		field  string
	}{
		{"sender unknown", func(tb testing.TB, fx fixture) {
			fx.line(tb, baRerun, "run 2")["sends"].([]any)[0].(map[string]any)["sender"] = wire.SenderUnknown
		}, "sends[0].sender"},
		{"a run not yet started", func(tb testing.TB, fx fixture) {
			fx.line(tb, baRerun, "run 1")["sends"].([]any)[0].(map[string]any)["sender"] = "p2"
		}, "sends[0].sender"},
		{"the late send charged to the next run", func(tb testing.TB, fx fixture) {
			lateSend(tb, fx, baRerun)
			fx.line(tb, baRerun, "run 2")["sends"].([]any)[0].(map[string]any)["sender"] = "p2"
		}, "stdout.points"},
		{"an earlier run's send the parent read before it ended", func(tb testing.TB, fx fixture) {
			e := fx.line(tb, baRerun, "run 2")["sends"].([]any)[0].(map[string]any)
			e["sender"], e["at"] = "p1", fx.proc(tb, baRerun, "trial 1 run 1")["started_at"]
		}, "sends[0].at"},
		{"the run's token", func(tb testing.TB, fx fixture) {
			fx.line(tb, baJournal, "run 2")["sender"] = "p7"
		}, "sender"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := withSenders(t, loadFixture(t))
			tt.tamper(t, fx)
			_, findings := foldExtra(t, fx)
			if !hasFinding(findings, tt.field) {
				b, _ := json.Marshal(findings)
				t.Errorf("no finding naming %q: %s", tt.field, b)
			}
		})
	}
}

func hasFinding(fs []results.Finding, field string) bool {
	for _, f := range fs {
		if strings.Contains(f.Field, field) {
			return true
		}
	}
	return false
}
