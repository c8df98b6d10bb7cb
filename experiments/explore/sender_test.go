package explore

import (
	"context"
	"encoding/json"
	"idemlab/experiments/receiver"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/experiments/subject"
	"idemlab/experiments/subject/builtin"
	"idemlab/worker/wire"
)

// latencySection is explore's section for the late-send run: the rerun-all
// batch alone is kept, its kill trials many.
const latencySection = `{"event_id": "e-1", "job_key": "k-1", "seed": 5, "trials": 100, "racers": [2], "rounds": 1, "parallel": 2, "max_attempts": 3, "items": 2}`

// runLateSends runs rerun-all's discovery and kill trials with a receiver
// that holds each send 60 ms before it logs it, so that a kill lands
// mostly while a send is held: the dead worker's request is logged after
// the parent reaped it, read the log and started the recovery.
func runLateSends(t *testing.T, kills int) scenariotest.Outcome {
	t.Helper()
	p, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(latencySection)})
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*plan)
	const name = "batch-rerun-all"
	pl.s.Patterns = slices.DeleteFunc(pl.s.Patterns, func(ps PatternSetting) bool { return ps.Name != name })
	pl.s.Conditions = slices.DeleteFunc(pl.s.Conditions, func(c Condition) bool {
		return c.Pattern != name || (c.Kind != KindDiscovery && c.Kind != KindKill)
	})
	for i := range pl.s.Conditions {
		if c := &pl.s.Conditions[i]; c.Kind == KindKill {
			c.Trials = c.Trials[:min(kills, len(c.Trials))]
		}
	}
	pl.sendLatency = 60 * time.Millisecond
	return scenariotest.RunPlan(t, New(sourceArticles(t)), pl, nil, nil)
}

// TestKilledSendersLateSendIsItsOwn kills rerun-all deliveries while the
// receiver holds a send: the request lands after its sender died, while
// the recovery runs. Counted by sender there is no finding, the late
// sends are recorded as such, and each counts for its trial's
// invariants. A send whose sender is changed by hand is a finding.
func TestKilledSendersLateSendIsItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	out := runLateSends(t, 10)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	var extra Extra
	if err := json.Unmarshal(out.Result.Extra, &extra); err != nil {
		t.Fatal(err)
	}
	if len(extra.LateSends) == 0 {
		t.Fatal("no send landed after its sender was killed; the receiver's latency should hold one past most kills")
	}
	const cond = "batch-rerun-all/timing-kill"
	for _, l := range extra.LateSends {
		if l.Condition != cond || l.Step != StepDelivery || l.Sender != wire.Token(1) || l.Note != receiver.NoteLateKilled {
			t.Errorf("late send %+v: want the killed delivery p1's, %q", l, receiver.NoteLateKilled)
		}
	}
	t.Logf("%d late sends: %+v", len(extra.LateSends), extra.LateSends)
	// The late send counts for the trial as the receiver saw it: its
	// item was accepted twice, once by the dead worker.
	l := extra.LateSends[0]
	var final State
	for _, ln := range out.Records.Observations {
		var o Observation
		json.Unmarshal(ln.Raw, &o)
		if o.Condition == cond && o.Trial == l.Trial {
			final = o.Rows
		}
	}
	n := 0
	for _, x := range subject.Sends(final) {
		if x.Item == l.Item && x.Accepted() {
			n++
		}
	}
	if n != 2 {
		t.Errorf("trial %d: %s accepted %d times, want 2 (the late send and the recovery's)", l.Trial, l.Item, n)
	}

	rec := out.Records
	at := findObs(t, rec, cond, l.Trial, StepRecovery)
	tests := []struct {
		name string
		to   string
		want string
	}{
		{"the late send charged to the recovery", wire.Token(2), "the receiver accepted 3 from its sender p2"},
		{"the late send of no sender", wire.SenderUnknown, "names sender unknown, no process of"},
		{"the late send of a process the trial never ran", wire.Token(9), "names sender p9, no process of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := scenariotest.Edit(t, rec, true, at, func(m map[string]any) {
				r := m["rows"].(map[string]any)
				s := r[builtin.TableSends].([]any)
				row := s[l.Seq-1].(string)
				s[l.Seq-1] = row[:strings.LastIndex(row, "|")+1] + tt.to
			})
			findings := scenario.Evaluate(New(sourceArticles(t)), nil, out.Settings, edited).AllFindings()
			for _, f := range findings {
				if strings.Contains(f.Message, tt.want) {
					return
				}
			}
			t.Errorf("no finding with %q: %v", tt.want, findings)
		})
	}
}
