package explore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/pattern"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/store"
)

// withBroker builds the idemlab-nats binary for the broker's tests, in
// the test process only: a re-executed worker dispatches before Run.
type withBroker struct{ m *testing.M }

func (w withBroker) Run() int { return brokertest.Main(w.m) }

// TestExploreOnBroker: with --broker nats the article files' points and
// random classes run on a JetStream server per trial, their races are
// left out, and the built-in subjects run as without a broker; the run
// says both. The files' verdicts are the harness's: separate commits
// break, the single transaction holds, and nothing is found in the
// records, the broker's word on each delivery included.
func TestExploreOnBroker(t *testing.T) {
	brokertest.Need(t)
	// No random trials: a few kills after a delay land where the
	// scheduler says, and on a broker more of a consumer's time goes
	// before its handler, so whether they break is not this test's.
	ov := map[string]string{pattern.FlagBroker: broker.NATS, "trials": "0"}
	out := scenariotest.Run(t, New(sourceArticles(t)), section, ov)
	if len(out.Findings) > 0 || !out.Result.Pass {
		for _, c := range out.Result.Conditions {
			if !c.Pass {
				t.Errorf("%s: %s", c.Name, c.Differences)
			}
		}
		t.Fatalf("pass %v, findings %v", out.Result.Pass, out.Findings)
	}
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	if st.Broker != broker.NATS || len(st.OnBroker) == 0 || len(st.Articles) != 1 || st.Articles[0].Broker == nil {
		t.Fatalf("settings: broker %q, on broker %v, %d article settings", st.Broker, st.OnBroker, len(st.Articles))
	}
	var faults []string
	for _, c := range st.Articles[0].Conditions {
		if c.Pattern == "separate-commit" {
			faults = append(faults, c.Fault)
		}
	}
	if d := cmp.Diff([]string{pattern.FaultNone, "points"}, faults); d != "" {
		t.Errorf("separate-commit's conditions on the broker (-want +got):\n%s", d)
	}
	violated := map[string]bool{}
	for _, c := range out.Result.Conditions {
		var v pattern.Verdict
		if strings.HasSuffix(c.Name, "/points") && json.Unmarshal(c.Observed, &v) == nil {
			violated[c.Name] = v.Violated
		}
	}
	if !violated["separate-commit/points"] || violated["single-transaction/points"] {
		t.Errorf("points verdicts on the broker: %v; want separate-commit broken, single-transaction held", violated)
	}
	brokered, builtins := 0, 0
	for _, l := range out.Records.Observations {
		var o pattern.Observation
		if json.Unmarshal(l.Raw, &o) == nil && o.Broker != nil {
			brokered++
		} else {
			builtins++
		}
	}
	if brokered == 0 || builtins == 0 {
		t.Errorf("%d observations on the broker, %d of the built-in subjects; want both", brokered, builtins)
	}
}

// TestExploreBrokerRefusals: --broker-url without --broker, an unknown
// broker, and a broker on PostgreSQL (races alone) are refused as usage.
func TestExploreBrokerRefusals(t *testing.T) {
	for _, tt := range []struct {
		on   backend.Spec
		ov   map[string]string
		want string
	}{
		{backend.SQLite, map[string]string{pattern.FlagBrokerURL: "nats://127.0.0.1:4222"}, "--broker-url needs --broker nats"},
		{backend.SQLite, map[string]string{pattern.FlagBroker: "kafka"}, "unknown broker \"kafka\""},
		{backend.Spec{Name: store.BackendPostgres}, map[string]string{pattern.FlagBroker: broker.NATS}, "explore on PostgreSQL runs the races alone"},
	} {
		_, err := New(sourceArticles(t)).Plan(context.Background(), scenario.PlanRequest{Backend: tt.on, Section: json.RawMessage(section), Overrides: tt.ov})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v on %s: %v, want %q", tt.ov, tt.on.Name, err, tt.want)
		}
	}
}
