package redelivery

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	wr "idemlab/worker/redelivery"
)

// ttlClaimPlan is a --broker-faults plan cut to its ttl-claim conditions.
func ttlClaimPlan(t *testing.T) Settings {
	t.Helper()
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Section: json.RawMessage(section),
		Overrides: map[string]string{FlagBroker: broker.NATS, FlagBrokerFaults: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	var keep []Condition
	for _, c := range st.Conditions {
		if c.Pattern == wr.TTLClaim {
			keep = append(keep, c)
		}
	}
	st.Conditions = keep
	return st
}

// TestTTLClaimConditions: --broker-faults plans the two TTLs on either
// side of AckWait, each with a hold longer than AckWait, and the oracle
// reads the one shorter than AckWait as expired and the other as held.
func TestTTLClaimConditions(t *testing.T) {
	st := ttlClaimPlan(t)
	got := map[string]bool{}
	for _, c := range st.Conditions {
		b := st.trialSettings(c)
		if c.HoldMS <= b.AckWaitMS {
			t.Errorf("%s: hold %d ms is not longer than AckWait %d ms", c.Name, c.HoldMS, b.AckWaitMS)
		}
		got[c.Name] = ClaimExpires(st, c)
	}
	want := map[string]bool{
		"ttl-claim/" + FaultSlowWork + "/ttl-shorter-than-work": true,
		"ttl-claim/" + FaultSlowWork + "/ttl-longer-than-work":  false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims expired at the redelivery (-want +got):\n%s", diff)
	}
}

// TestBrokerTTLClaim runs the TTL claim under an AckWait shorter than the
// work on real brokers, with real consumer processes: the oracle, through
// Evaluate, judges the rows and the broker's word; the test then names the
// facts each condition is about, and tampers with the TTL and the late
// ack's answer.
func TestBrokerTTLClaim(t *testing.T) {
	brokertest.Need(t)
	st := ttlClaimPlan(t)
	out := scenariotest.RunPlan(t, New(), &plan{s: st}, nil, nil)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	type fact struct {
		Jobs                      int
		Concurrent                bool
		FirstWon, SecondWon       bool
		FirstAcked, SecondAcked   bool
		SecondNacked, Redelivered bool
	}
	got, want := map[string]fact{}, map[string]fact{}
	for name, ds := range passedDeliveries(t, out) {
		c1, c2 := ds[0].Broker.Consumer, ds[1].Broker.Consumer
		if c1 == nil || c2 == nil || c1.ClaimWon == nil || c2.ClaimWon == nil {
			t.Fatalf("%s: a consumer without its claim: %+v, %+v", name, c1, c2)
		}
		got[name] = fact{Jobs: ds[1].FollowUpJobs, Concurrent: ds[1].Broker.Concurrent, FirstWon: *c1.ClaimWon, SecondWon: *c2.ClaimWon,
			FirstAcked: c1.Acked, SecondAcked: c2.Acked, SecondNacked: c2.Nacked, Redelivered: c2.Redelivered}
	}
	for _, c := range st.Conditions {
		// The duplicate follows the claim's expiry: one job per winner.
		x := ClaimExpires(st, c)
		jobs := 1
		if x {
			jobs = 2
		}
		want[c.Name] = fact{Jobs: jobs, Concurrent: true, FirstWon: true, SecondWon: x, FirstAcked: true, SecondAcked: x, SecondNacked: !x, Redelivered: true}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ttl-claim facts (-want +got):\n%s", diff)
	}
	t.Run("tamper", func(t *testing.T) { ttlClaimTamper(t, out, st) })
}

// ttlClaimTamper edits the recorded TTL, in the settings and in a
// consumer's report, and the late ack's answer; each edit must fail the
// evaluation, naming the field.
func ttlClaimTamper(t *testing.T, out scenariotest.Outcome, st Settings) {
	short := st.Conditions[0]
	if !ClaimExpires(st, short) {
		t.Fatalf("condition %s's claim does not expire", short.Name)
	}
	first := -1
	for i, p := range out.Records.Processes {
		if p.Condition == short.Name && p.Label == "delivery 1" {
			first = i
		}
	}
	if first < 0 {
		t.Fatalf("no delivery 1 of %s among the processes", short.Name)
	}
	stdout := func(from, to string) func(m map[string]any) { return stdoutEdit(t, from, to) }
	t.Run("late ack answer", func(t *testing.T) {
		requireNamed(t, out, nil, false, first, stdout(`"ack":{"answered":true}`, `"ack":{"answered":false}`), "broker.consumer.acked")
	})
	t.Run("claim ttl in the report", func(t *testing.T) {
		requireNamed(t, out, nil, false, first, stdout(`"ttl_ms":`+jsonInt(short.ClaimTTLMS), `"ttl_ms":`+jsonInt(st.Conditions[1].ClaimTTLMS)), "claim.ttl_ms")
	})
	t.Run("work reported", func(t *testing.T) {
		requireNamed(t, out, nil, false, first, stdout(`"job_inserted":true`, `"job_inserted":false`), "side by side reported 1 jobs inserted, but follow_up_jobs went 0 → 2")
	})
	t.Run("claim ttl in the settings", func(t *testing.T) {
		var m map[string]any
		if err := json.Unmarshal(out.Settings, &m); err != nil {
			t.Fatal(err)
		}
		m["conditions"].([]any)[0].(map[string]any)["claim_ttl_ms"] = float64(st.Conditions[1].ClaimTTLMS)
		tampered, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		said := whatFails(scenario.Evaluate(New(), nil, tampered, out.Records))
		for _, field := range []string{"argv", "claim_won", "follow_up_jobs"} {
			if !strings.Contains(said, field) {
				t.Errorf("nothing names %q; got:\n%s", field, said)
			}
		}
	})
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
