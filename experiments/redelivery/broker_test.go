package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

var natsFlag = map[string]string{FlagBroker: broker.NATS}

// TestBrokerTableEqualsHarness runs article 000 on a real JetStream
// server, one per condition, and checks the table of rows after each
// delivery against the harness-redelivered oracle (Expect without a
// broker): separate commits leave two jobs, the single transaction one.
// The broker's word is checked by the broker oracle through Evaluate.
func TestBrokerTableEqualsHarness(t *testing.T) {
	brokertest.Need(t)
	out := scenariotest.Run(t, New(), section, natsFlag)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	harness := map[string][]counts{}
	for _, c := range Conditions() {
		harness[c.Name] = pick(Expect(settings, c))
	}
	got := map[string][]counts{}
	for _, c := range out.Result.Conditions {
		var obs []Delivery
		if err := json.Unmarshal(c.Observed, &obs); err != nil {
			t.Fatal(err)
		}
		got[c.Name] = pick(obs)
	}
	if diff := cmp.Diff(harness, got); diff != "" {
		t.Errorf("broker table differs from the harness's (-harness +broker):\n%s", diff)
	}
	if jobs := got["separate-commit/crash-after-job-commit"][1].Jobs; jobs != 2 {
		t.Errorf("separate commits on the broker left %d jobs, want the duplicate (2)", jobs)
	}
	t.Run("tamper", func(t *testing.T) { brokerTamper(t, out) })
}

// brokerTamper edits one recorded broker fact at a time; each edit must
// fail the evaluation, naming the field.
func brokerTamper(t *testing.T, out scenariotest.Outcome) {
	// Observation and process 2 are separate-commit/crash-after-job-commit's
	// delivery 1 (crashed), 3 its redelivery.
	state := func(k string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["broker"].(map[string]any)["state"].(map[string]any)[k] = v }
	}
	stdout := func(from, to string) func(m map[string]any) { return stdoutEdit(t, from, to) }
	tests := []struct {
		name  string
		obs   bool
		index int
		edit  func(m map[string]any)
		field string
	}{
		{"ack pending", true, 2, state("num_ack_pending", 0.0), "broker.state.num_ack_pending"},
		{"ack floor", true, 3, state("ack_floor_stream_seq", 0.0), "broker.state.ack_floor_stream_seq"},
		{"delivered", true, 1, state("delivered_consumer_seq", 2.0), "broker.state.delivered_consumer_seq"},
		{"publish duplicate", true, 0, func(m map[string]any) {
			m["broker"].(map[string]any)["published"].(map[string]any)["duplicate"] = true
		}, "broker.published.duplicate"},
		{"publish msg id", true, 0, func(m map[string]any) {
			m["broker"].(map[string]any)["published"].(map[string]any)["msg_id"] = "other"
		}, "broker.published"},
		{"server dropped", true, 0, func(m map[string]any) { delete(m["broker"].(map[string]any), "server") }, "broker.server"},
		{"server sync interval", true, 0, func(m map[string]any) {
			m["broker"].(map[string]any)["server"].(map[string]any)["sync_interval"] = natswire.SyncAlways
		}, "broker.server.sync_interval"},
		{"broker url", true, 3, func(m map[string]any) { m["broker"].(map[string]any)["url"] = "nats://127.0.0.1:1" }, "argv"},
		{"delivery count", false, 3, stdout(`"num_delivered":2`, `"num_delivered":1`), "broker.consumer.num_delivered"},
		{"redelivered flag", false, 3, stdout(`"redelivered":true`, `"redelivered":false`), "redelivered"},
		{"ack answer", false, 3, stdout(`"ack":{"answered":true}`, `"ack":{"answered":false}`), "broker.consumer.acked"},
		{"fetched", false, 1, stdout(`"fetched":false`, `"fetched":true`), "broker.consumer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireNamed(t, out, natsFlag, tt.obs, tt.index, tt.edit, tt.field) })
	}
}

// requireNamed edits one record of out (observation or process line
// index) and requires the evaluation under flags to fail, naming field.
func requireNamed(t *testing.T, out scenariotest.Outcome, flags map[string]string, obs bool, index int, edit func(map[string]any), field string) {
	t.Helper()
	rec := scenariotest.Edit(t, out.Records, obs, index, edit)
	said := whatFails(scenario.Evaluate(New(), flags, out.Settings, rec))
	if said == "" {
		t.Fatal("edit passed unnoticed")
	}
	if !strings.Contains(said, field) {
		t.Errorf("nothing names %q; got:\n%s", field, said)
	}
}

// TestBrokerFlag: the default is no broker and leaves the settings as they
// were; a broker no one knows, or one with --server-crash, is refused.
func TestBrokerFlag(t *testing.T) {
	plan := func(spec backend.Spec, ov map[string]string) (Settings, error) {
		p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: spec, Section: json.RawMessage(section), Overrides: ov})
		if err != nil {
			return Settings{}, err
		}
		return p.Settings().(Settings), nil
	}
	for _, ov := range []map[string]string{nil, {FlagBroker: broker.None}} {
		st, err := plan(backend.SQLite, ov)
		if err != nil || st.Broker != nil || strings.Contains(string(scenario.Marshal(st)), `"broker"`) {
			t.Errorf("%v: broker %+v, %v; want none and no broker in the settings", ov, st.Broker, err)
		}
	}
	st, err := plan(backend.SQLite, natsFlag)
	if want := broker.DefaultNATS(); err != nil || st.Broker == nil || *st.Broker != want {
		t.Errorf("--broker nats: %+v, %v; want %+v", st.Broker, err, want)
	}
	if st.Broker != nil && st.Broker.FetchWait() <= st.Broker.AckWait() {
		t.Errorf("fetch wait %s is not longer than AckWait %s: a redelivery could be missed", st.Broker.FetchWait(), st.Broker.AckWait())
	}
	pg := backend.Spec{Name: store.BackendPostgres, Isolation: "read committed", SynchronousCommit: "on"}
	for _, tt := range []struct {
		spec backend.Spec
		ov   map[string]string
		want string
	}{
		{backend.SQLite, map[string]string{FlagBroker: "rabbitmq"}, "unknown broker"},
		{pg, map[string]string{FlagBroker: broker.NATS, FlagServerCrash: "true"}, "server-crash"},
	} {
		if _, err := plan(tt.spec, tt.ov); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error containing %q", tt.ov, err, tt.want)
		}
	}
}

// TestBrokerFaults runs --broker-faults on real brokers: the oracle
// (through Evaluate) judges every figure and broker fact; the test names
// the fact each condition is about, so a change to the oracle that drops
// one is caught here too.
func TestBrokerFaults(t *testing.T) {
	brokertest.Need(t)
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Section: json.RawMessage(section),
		Overrides: map[string]string{FlagBroker: broker.NATS, FlagBrokerFaults: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	st.Conditions = BrokerFaultConditions(*st.Broker)
	out := scenariotest.RunPlan(t, New(), &plan{s: st}, nil, nil)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	got := passedDeliveries(t, out)
	type fact struct {
		Jobs                     int
		Messages                 uint64
		Restarted                bool
		Publishers               []PublisherFacts
		SecondFetched            bool
		SecondCount              uint64
		SecondConcurrent         bool
		FirstAcked, SecondAcked  bool
		FirstRedelivered, Second bool
		FirstInProgress          int
		Processed                int
		AckPending               int
		AckFloor                 uint64
	}
	pickFact := func(ds []Delivery) fact {
		d1, d2 := ds[0].Broker, ds[1].Broker
		f := fact{Jobs: ds[1].FollowUpJobs, Processed: ds[1].ProcessedEvents, Messages: d2.State.Messages, Restarted: d1.Restarted, Publishers: d1.Publishers,
			SecondConcurrent: d2.Concurrent, AckPending: d2.State.NumAckPending, AckFloor: d2.State.AckFloor}
		if c := d1.Consumer; c != nil {
			f.FirstAcked, f.FirstRedelivered, f.FirstInProgress = c.Acked, c.Redelivered, c.InProgress
		}
		if c := d2.Consumer; c != nil {
			f.SecondFetched, f.SecondCount, f.SecondAcked, f.Second = c.Fetched, c.NumDelivered, c.Acked, c.Redelivered
		}
		return f
	}
	crashed := PublisherFacts{Publisher: 1, ExitCode: protocol.ExitCrash, CrashedAt: wr.PointAfterPublishAck}
	// The notices a hold of 2 AckWaits sends every quarter AckWait.
	notices := wr.Notices(2*st.Broker.AckWait(), st.Broker.AckWait()/4)
	want := map[string]fact{
		// Nothing acked is lost to a SIGKILL: the message is delivered once.
		"separate-commit/broker-killed-after-publish": {Jobs: 1, Processed: 1, Messages: 1, Restarted: true, FirstAcked: true, AckFloor: 1},
		// The first publisher crashes after the publish ack, before its
		// outbox row; the second republishes. Inside the window its
		// publish is a duplicate of sequence 1.
		"separate-commit/republish-in-window": {Jobs: 1, Processed: 1, Messages: 1, Publishers: []PublisherFacts{crashed, {Publisher: 2, Seq: 1, Duplicate: true}}, FirstAcked: true, AckFloor: 1},
		// After it, a second message, delivered once, absorbed by the
		// processed check: still one job.
		"separate-commit/republish-after-window": {Jobs: 1, Processed: 1, Messages: 2, Publishers: []PublisherFacts{crashed, {Publisher: 2, Seq: 2}}, FirstAcked: true, SecondFetched: true, SecondCount: 1, SecondAcked: true, AckFloor: 2},
		// Working past AckWait: redelivered while the first still works,
		// the two run concurrently, and the late ack is answered.
		"separate-commit/" + FaultSlowWork: {Jobs: 1, Processed: 1, Messages: 1, FirstAcked: true, SecondFetched: true, SecondCount: 2, SecondAcked: true, Second: true, SecondConcurrent: true, AckFloor: 1},
		// The same work saying +WPI every quarter AckWait is not redelivered:
		// the consumer beside it gets nothing.
		"separate-commit/" + FaultInProgress: {Jobs: 1, Processed: 1, Messages: 1, FirstAcked: true, FirstInProgress: notices, SecondConcurrent: true, AckFloor: 1},
		// MaxDeliver 1: the crashed delivery is not redelivered; the job
		// stays without its processed record, the event is no longer
		// pending, and the reported ack floor stays at 0.
		"separate-commit/crash-after-job-commit/" + FaultMaxDeliver: {Jobs: 1, Processed: 0, Messages: 1},
		// Ack first, then crash: the broker counts the event acked and
		// never delivers it again; the job stands without its record.
		"separate-commit/crash-after-job-commit/" + FaultAckFirst: {Jobs: 1, Processed: 0, Messages: 1, AckFloor: 1},
	}
	// The TTL claims (TestBrokerTTLClaim names their facts): delivery 2
	// is redelivered beside delivery 1 and acks only when the claim it
	// found had expired, doing the work again.
	for _, c := range st.Conditions {
		if c.Pattern == wr.TTLClaim {
			x := ClaimExpires(st, c)
			f := fact{Jobs: 1, Messages: 1, FirstAcked: true, SecondFetched: true, SecondCount: 2, SecondAcked: x, Second: true, SecondConcurrent: true, AckFloor: 1}
			if x {
				f.Jobs = 2
			}
			want[c.Name] = f
		}
	}
	gotFacts := map[string]fact{}
	for name, ds := range got {
		gotFacts[name] = pickFact(ds)
	}
	if diff := cmp.Diff(want, gotFacts); diff != "" {
		t.Errorf("broker facts (-want +got):\n%s", diff)
	}
	// The second publisher's answer, edited, fails the evaluation naming
	// the publisher's field; so does its crash env removed.
	edited := 0
	for i, pr := range out.Records.Processes {
		if pr.Condition != "separate-commit/republish-in-window" {
			continue
		}
		var edit func(m map[string]any)
		field := ""
		switch pr.Label {
		case "publisher 2":
			edit = func(m map[string]any) {
				m["stdout"] = strings.Replace(m["stdout"].(string), `"duplicate":true`, `"duplicate":false`, 1)
			}
			field = "broker.publishers[1].duplicate"
		case "publisher 1":
			edit, field = func(m map[string]any) { m["env"] = map[string]any{} }, "env"
		default:
			continue
		}
		edited++
		rec := scenariotest.Edit(t, out.Records, false, i, edit)
		if said := whatFails(scenario.Evaluate(New(), nil, out.Settings, rec)); !strings.Contains(said, field) {
			t.Errorf("%s edited: nothing names %q; got:\n%s", pr.Label, field, said)
		}
	}
	if edited != 2 {
		t.Errorf("edited %d publisher processes, want 2", edited)
	}
}

// TestBrokerURL runs the article's conditions and the faults on a server
// the test starts as the user's: each condition's stream is made there
// and deleted, the user's own stream keeps its message, and the kill is
// left out, saying why.
func TestBrokerURL(t *testing.T) {
	brokertest.Need(t)
	b, err := broker.Lookup(broker.NATS)
	if err != nil {
		t.Fatal(err)
	}
	users, err := b.Start(context.Background(), broker.DefaultNATS(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer users.Close()
	if _, err := users.Publish("theirs", nil); err != nil {
		t.Fatal(err)
	}
	ov := map[string]string{FlagBroker: broker.NATS, FlagBrokerURL: users.URL(), FlagBrokerFaults: "true"}
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Section: json.RawMessage(section), Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	if len(st.BrokerLeftOut) != 1 || !strings.Contains(st.BrokerLeftOut[0], "broker-killed-after-publish") {
		t.Errorf("left out %q, want the broker's kill", st.BrokerLeftOut)
	}
	// The article's crash and a fault run; the rest are the same code.
	var keep []Condition
	for _, c := range st.Conditions {
		if c.Name == "separate-commit/crash-after-job-commit" || c.BrokerFault == FaultRepublishInWindow {
			keep = append(keep, c)
		}
	}
	st.Conditions = keep
	out := scenariotest.RunPlan(t, New(), &plan{s: st}, nil, ov)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	c, err := natswire.Dial(users.URL(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cond := range keep {
		name := st.trialSettings(cond).Stream
		if _, err := c.StreamInfo(name); err == nil {
			t.Errorf("stream %s is still on the user's server", name)
		}
	}
	if s, err := users.State(); err != nil || s.Messages != 1 {
		t.Errorf("the user's stream holds %+v (%v), want its one message", s, err)
	}
}

// whatFails lists an evaluation's findings and each failed condition's
// difference paths, one a line; empty when nothing failed.
func whatFails(res results.ScenarioResult) string {
	var said []string
	for _, f := range res.AllFindings() {
		said = append(said, f.String())
	}
	for _, c := range res.Conditions {
		for _, d := range c.Differences {
			said = append(said, fmt.Sprintf("%s %s", c.Name, d.Path))
		}
	}
	return strings.Join(said, "\n")
}

// passedDeliveries requires every condition of out to pass and returns
// each one's observed deliveries.
func passedDeliveries(t *testing.T, out scenariotest.Outcome) map[string][]Delivery {
	t.Helper()
	got := map[string][]Delivery{}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
		var obs []Delivery
		if err := json.Unmarshal(c.Observed, &obs); err != nil {
			t.Fatal(err)
		}
		got[c.Name] = obs
	}
	return got
}

// stdoutEdit is a process-line edit replacing from with to in the
// recorded stdout, which must hold it.
func stdoutEdit(t *testing.T, from, to string) func(m map[string]any) {
	return func(m map[string]any) {
		s := m["stdout"].(string)
		if !strings.Contains(s, from) {
			t.Fatalf("stdout %s holds no %s", s, from)
		}
		m["stdout"] = strings.Replace(s, from, to, 1)
	}
}
