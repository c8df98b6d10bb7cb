package pattern

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
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
	"idemlab/worker"
	"idemlab/worker/natswire"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
)

// TestMain builds the idemlab-nats binary for the broker's tests, in the
// test process only: a re-executed worker dispatches before Run.
func TestMain(m *testing.M) { worker.TestMain(withBroker{m}) }

type withBroker struct{ m *testing.M }

func (w withBroker) Run() int { return brokertest.Main(w.m) }

// shipped is a shipped pattern file's path from this package.
func shipped(name string) string {
	return filepath.Join("..", "..", "testdata", "patterns", name+".json")
}

// runFile plans and runs one pattern file with real processes under ov
// and evaluates its records.
func runFile(t *testing.T, file string, ov map[string]string) scenariotest.Outcome {
	t.Helper()
	ov["pattern-file"] = file
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Overrides: ov, Files: osFiles{}})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return scenariotest.RunPlan(t, New(), p, nil, ov)
}

// table is what a run's conditions show: each condition's trials, the
// trials that broke and the invariants they broke.
type tableRow struct {
	Trials    int
	Violating []int
	Broken    map[string]int
}

func tableOf(t *testing.T, out scenariotest.Outcome) map[string]tableRow {
	t.Helper()
	var x Extra
	if err := json.Unmarshal(out.Result.Extra, &x); err != nil {
		t.Fatal(err)
	}
	got := map[string]tableRow{}
	for _, p := range x.Patterns {
		for _, c := range p.Conditions {
			got[c.Name] = tableRow{c.Trials, c.ViolatingTrials, c.Broken}
		}
	}
	return got
}

// TestBrokerTableEqualsHarness runs the article's two files under the
// points class on a real JetStream server per trial, each delivery a
// consumer process, and on the harness's own redelivery: the tables are
// the same, trial by trial (separate commits break where the harness's
// run breaks, with two jobs; the single transaction holds), every run
// passes and its fold, which checks the broker's word on each delivery,
// finds nothing.
func TestBrokerTableEqualsHarness(t *testing.T) {
	brokertest.Need(t)
	for _, name := range []string{"separate-commit", "single-transaction"} {
		t.Run(name, func(t *testing.T) {
			harness := runFile(t, shipped(name), map[string]string{"faults": "points"})
			onBroker := runFile(t, shipped(name), map[string]string{"faults": "points", FlagBroker: broker.NATS})
			for what, out := range map[string]scenariotest.Outcome{"harness": harness, "broker": onBroker} {
				if len(out.Findings) > 0 || !out.Result.Pass {
					t.Fatalf("%s: pass %v, findings %v", what, out.Result.Pass, out.Findings)
				}
			}
			want, got := tableOf(t, harness), tableOf(t, onBroker)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("the broker's table differs from the harness's (-harness +broker):\n%s", d)
			}
			if row := got[name+"/points"]; (name == "separate-commit") != (len(row.Violating) > 0) || name == "separate-commit" && row.Broken["one job"] == 0 {
				t.Errorf("%s on the broker: %+v", name, row)
			}
			if name == "separate-commit" {
				t.Run("tamper", func(t *testing.T) { brokerTamper(t, onBroker) })
			}
		})
	}
}

// brokerTamper edits one recorded broker fact at a time; each edit must
// fail the evaluation, naming the field.
func brokerTamper(t *testing.T, out scenariotest.Outcome) {
	// The first observation line of a trial that crashed and was
	// redelivered, and its two consumer processes.
	line, first, second := -1, -1, -1
	for i, l := range out.Records.Observations {
		var o Observation
		if json.Unmarshal(l.Raw, &o) == nil && o.Kind == KindPoint && len(o.Deliveries) == 2 && o.Point == "after-4-commit" {
			line, first, second = i, o.Deliveries[0].ProcessID, o.Deliveries[1].ProcessID
		}
	}
	if line < 0 {
		t.Fatal("no point trial at after-4-commit with two deliveries")
	}
	procIndex := func(id int) int {
		for i, p := range out.Records.Processes {
			if p.ID == id {
				return i
			}
		}
		t.Fatalf("no process %d", id)
		return -1
	}
	state := func(d int, k string, v any) func(m map[string]any) {
		return func(m map[string]any) {
			m["deliveries"].([]any)[d].(map[string]any)["broker"].(map[string]any)[k] = v
		}
	}
	stdout := func(from, to string) func(m map[string]any) {
		return func(m map[string]any) {
			s := m["stdout"].(string)
			if !strings.Contains(s, from) {
				t.Fatalf("stdout %s holds no %s", s, from)
			}
			m["stdout"] = strings.Replace(s, from, to, 1)
		}
	}
	tests := []struct {
		name  string
		obs   bool
		index int
		edit  func(m map[string]any)
		field string
	}{
		{"acked after the crash", true, line, state(0, "ack_floor_stream_seq", 1.0), "deliveries[0].broker"},
		{"not acked after the redelivery", true, line, state(1, "num_ack_pending", 1.0), "deliveries[1].broker"},
		{"delivered once", true, line, state(1, "delivered_consumer_seq", 1.0), "deliveries[1].broker"},
		{"publish duplicate", true, line, func(m map[string]any) {
			m["broker"].(map[string]any)["published"].(map[string]any)["duplicate"] = true
		}, "broker.published"},
		{"server dropped", true, line, func(m map[string]any) { delete(m["broker"].(map[string]any), "server") }, "broker.server"},
		{"broker url", true, line, func(m map[string]any) { m["broker"].(map[string]any)["url"] = "nats://127.0.0.1:1" }, "argv"},
		{"delivery count", false, procIndex(second), stdout(`"num_delivered":2`, `"num_delivered":1`), "delivered it 1 times"},
		{"redelivered flag", false, procIndex(second), stdout(`"redelivered":true`, `"redelivered":false`), "redelivered=false"},
		{"a file's delivery with a consumer", true, line, func(m map[string]any) {
			m["deliveries"].([]any)[0].(map[string]any)["consumer_id"] = 1.0
		}, "deliveries[0].consumer_id"},
		{"ack answer", false, procIndex(second), stdout(`"ack":{"answered":true}`, `"ack":{"answered":false}`), "did not accept its ack"},
		{"the crashed one acked", false, procIndex(first), func(m map[string]any) { m["stderr"] = "pattern.deliver: ack\n" }, "deliveries[0].broker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, out.Records, tt.obs, tt.index, tt.edit)
			res := scenario.Evaluate(New(), map[string]string{FlagBroker: broker.NATS}, out.Settings, rec)
			said := fmt.Sprint(res.AllFindings())
			if len(res.AllFindings()) == 0 {
				t.Fatal("edit passed unnoticed")
			}
			if !strings.Contains(said, tt.field) {
				t.Errorf("nothing names %q; got:\n%s", tt.field, said)
			}
		})
	}
}

// TestBrokerAckFirstLosesTheEvent: on the broker the ack step acks the
// message with the server before any work, so a crash after it leaves the
// broker's ack floor on the message and nothing is redelivered: the
// event is lost, as under the harness's redelivery.
func TestBrokerAckFirstLosesTheEvent(t *testing.T) {
	brokertest.Need(t)
	out := runFile(t, shipped("ack-first"), map[string]string{"faults": "points", FlagBroker: broker.NATS})
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("pass %v, findings %v", out.Result.Pass, out.Findings)
	}
	lost := 0
	for _, l := range out.Records.Observations {
		var o Observation
		if json.Unmarshal(l.Raw, &o) != nil || o.Kind != KindPoint || o.Point != "after-1-ack" {
			continue
		}
		lost++
		if len(o.Deliveries) != 1 || o.Deliveries[0].Broker == nil || o.Deliveries[0].Broker.AckFloor != 1 || o.Values["one job"].Text != "0" {
			t.Errorf("the crash after the ack: deliveries %+v, values %v; want one delivery the broker counts acked, and no job", o.Deliveries, o.Values)
		}
	}
	if lost != 1 {
		t.Errorf("%d trials crashed right after the ack, want 1", lost)
	}
}

// TestBrokerURL: with --broker-url the trials run on the user's server,
// each on a stream of its own named after its condition and trial, which
// the trial deletes at its end; the user's own stream is left alone.
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
	out := runFile(t, shipped("single-transaction"), map[string]string{"faults": "points", FlagBroker: broker.NATS, FlagBrokerURL: users.URL()})
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("pass %v, findings %v", out.Result.Pass, out.Findings)
	}
	streams := map[string]bool{}
	for _, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil || o.Broker == nil || o.Broker.URL != users.URL() || o.Broker.Published == nil {
			t.Fatalf("observation %s: %v; want the user's server's word", l.Raw, err)
		}
		streams[o.Broker.Published.Stream] = true
	}
	if len(streams) != len(out.Records.Observations) {
		t.Errorf("%d streams for %d trials; want one each", len(streams), len(out.Records.Observations))
	}
	c, err := natswire.Dial(users.URL(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for s := range streams {
		if _, err := c.StreamInfo(s); err == nil {
			t.Errorf("stream %s is still on the user's server", s)
		}
	}
	if st, err := users.State(); err != nil || st.Messages != 1 {
		t.Errorf("the user's stream: %+v, %v; want its one message", st, err)
	}
}

// handler is a shipped handler program's pattern file's path from this
// package.
func handler(name string) string {
	return filepath.Join("..", "..", "testdata", "handlers", name+".json")
}

// TestBrokerProgramTableEqualsHarness runs the shipped Python handlers
// (separate commits, one transaction) under the points class on a real JetStream server per trial, each delivery a consumer
// process that runs the program, and on the harness's own redelivery:
// the points tables are the same, trial by trial (separate commits break
// at the point after the first commit, the single transaction holds),
// and every run and its fold, which cross-checks the consumer's and the
// program's lines and the broker's word on each delivery, finds nothing.
func TestBrokerProgramTableEqualsHarness(t *testing.T) {
	brokertest.Need(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH; the shipped handlers are Python")
	}
	for _, name := range []string{"separate-commit", "single-transaction"} {
		t.Run(name, func(t *testing.T) {
			harness := runFile(t, handler(name), map[string]string{"faults": "points"})
			onBroker := runFile(t, handler(name), map[string]string{"faults": "points", FlagBroker: broker.NATS})
			for what, out := range map[string]scenariotest.Outcome{"harness": harness, "broker": onBroker} {
				if len(out.Findings) > 0 || !out.Result.Pass {
					t.Fatalf("%s: pass %v, findings %v", what, out.Result.Pass, out.Findings)
				}
			}
			want, got := tableOf(t, harness), tableOf(t, onBroker)
			prog := t.Name()[len("TestBrokerProgramTableEqualsHarness/"):] + "-program/points"
			if d := cmp.Diff(want[prog], got[prog]); d != "" {
				t.Errorf("the broker's points row differs from the harness's (-harness +broker):\n%s", d)
			}
			if row := got[prog]; (name == "separate-commit") != (len(row.Violating) > 0) || name == "separate-commit" && row.Broken["one job"] == 0 {
				t.Errorf("%s on the broker: %+v (table %+v)", name, row, got)
			}
			if name == "separate-commit" {
				t.Run("deliveries", func(t *testing.T) { programDeliveries(t, onBroker) })
				t.Run("tamper", func(t *testing.T) { programTamper(t, onBroker) })
			}
		})
	}
	// The random class's kills at a hit and after a delay, made by the
	// consumer on its program: the fold finds nothing (whether a few
	// random trials break is chance, so the verdict is not judged).
	t.Run("random", func(t *testing.T) {
		out := runFile(t, handler("separate-commit"), map[string]string{"faults": "random", "trials": "4", FlagBroker: broker.NATS})
		if len(out.Findings) > 0 {
			t.Fatalf("findings %v", out.Findings)
		}
	})
}

// programDeliveries checks, on the separate-commit handler's broker run,
// that the trial killed after its first commit was delivered twice by the
// broker, each delivery a consumer line and a program line whose
// environment carries the broker's count and flag.
func programDeliveries(t *testing.T, out scenariotest.Outcome) {
	procs := map[int]results.Process{}
	for _, p := range out.Records.Processes {
		procs[p.ID] = p
	}
	type seen struct {
		Consumer, Program, Count, Redelivered string
		ConsumerExit, ProgramExit             int
	}
	var got []seen
	for _, l := range out.Records.Observations {
		var o Observation
		if json.Unmarshal(l.Raw, &o) != nil || o.Kind != KindPoint || o.Point != "after-job-commit" {
			continue
		}
		for _, d := range o.Deliveries {
			c, p := procs[d.Consumer], procs[d.ProcessID]
			got = append(got, seen{c.Worker, p.Worker, p.Env[wp.EnvDeliveryCount], p.Env[wp.EnvRedelivered], c.ExitCode, p.ExitCode})
		}
	}
	want := []seen{
		{wp.ProgramConsumerName, "program", "1", "0", wp.ExitNotAcked, -1},
		{wp.ProgramConsumerName, "program", "2", "1", protocol.ExitACK, protocol.ExitACK},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the trial killed after the job's commit (-want +got):\n%s", d)
	}
}

// programTamper edits one recorded fact of a program's delivery on the
// broker at a time: the trial killed after the job's commit, its two
// consumers and two programs. Each edit must fail the evaluation, naming
// what it broke.
func programTamper(t *testing.T, out scenariotest.Outcome) {
	line := -1
	var ds []Delivery
	for i, l := range out.Records.Observations {
		var o Observation
		if json.Unmarshal(l.Raw, &o) == nil && o.Kind == KindPoint && o.Point == "after-job-commit" && len(o.Deliveries) == 2 {
			line, ds = i, o.Deliveries
		}
	}
	if line < 0 {
		t.Fatal("no point trial at after-job-commit with two deliveries")
	}
	procIndex := func(id int) int {
		for i, p := range out.Records.Processes {
			if p.ID == id {
				return i
			}
		}
		t.Fatalf("no process %d", id)
		return -1
	}
	stdout := func(from, to string) func(m map[string]any) {
		return func(m map[string]any) {
			s := m["stdout"].(string)
			if !strings.Contains(s, from) {
				t.Fatalf("stdout %s holds no %s", s, from)
			}
			m["stdout"] = strings.Replace(s, from, to, 1)
		}
	}
	tests := []struct {
		name  string
		obs   bool
		index int
		edit  func(m map[string]any)
		field string
	}{
		{"redelivered flag in the program's environment", false, procIndex(ds[1].ProcessID), func(m map[string]any) {
			m["env"].(map[string]any)[wp.EnvRedelivered] = "0"
		}, "env"},
		{"the killed program's consumer acked", false, procIndex(ds[0].Consumer), func(m map[string]any) { m["exit_code"] = 0.0 }, "exit_code"},
		{"the consumer's word on its program", false, procIndex(ds[0].Consumer), stdout(`"killed_at":"after-job-commit"`, `"killed_at":"after-job-insert"`), "reports its program"},
		{"the consumer's program argument", false, procIndex(ds[1].Consumer), func(m map[string]any) {
			argv := m["argv"].([]any)
			argv[len(argv)-1] = "other.py"
		}, "argv"},
		{"no consumer", true, line, func(m map[string]any) {
			delete(m["deliveries"].([]any)[1].(map[string]any), "consumer_id")
		}, "no observation refers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, out.Records, tt.obs, tt.index, tt.edit)
			res := scenario.Evaluate(New(), map[string]string{FlagBroker: broker.NATS}, out.Settings, rec)
			said := fmt.Sprint(res.AllFindings())
			if len(res.AllFindings()) == 0 {
				t.Fatal("edit passed unnoticed")
			}
			if !strings.Contains(said, tt.field) {
				t.Errorf("nothing names %q; got:\n%s", tt.field, said)
			}
		})
	}
}
