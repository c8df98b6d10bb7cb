package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"idemlab/experiments/broker"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// FlagBroker chooses who redelivers: none (the harness, as the article's
// runs do) or nats (a JetStream server per condition).
const FlagBroker = "broker"

// BrokerDelivery is the broker's word on one delivery: what the consumer
// process was told (a delivery that crashed before its ack told nothing),
// and the stream's and consumer's state the parent read once the process
// had exited.
type BrokerDelivery struct {
	Consumer *ConsumerFacts `json:"consumer,omitempty"`
	// Published is the publish ack, on delivery 1.
	Published *PublishFacts `json:"published,omitempty"`
	State     broker.State  `json:"state"`
}

// ConsumerFacts are what a consumer that reached its ack reported.
type ConsumerFacts struct {
	Fetched      bool   `json:"fetched"`
	NumDelivered uint64 `json:"num_delivered,omitempty"`
	Redelivered  bool   `json:"redelivered"`
	Acked        bool   `json:"acked"`
}

// PublishFacts are the stream's answer to the harness's publish.
type PublishFacts struct {
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

// ConsumeArgs are a broker delivery's worker arguments for the trial's
// server at url.
func (s Settings) ConsumeArgs(c Condition, db, url string) wr.ConsumeArgs {
	b := *s.Broker
	return wr.ConsumeArgs{Deliver: s.Args(c, db), Sub: natswire.Sub{URL: url, Stream: b.Stream, Consumer: b.Consumer, FetchWait: b.FetchWait()}}
}

// expectBroker is the oracle on a broker. The rows and points come from
// the same model as the harness's redelivery: delivery 2 is the model's
// redelivery. What differs is who redelivers: the broker delivers again
// only an event whose first consumer crashed before its ack, after
// AckWait, with the delivery count 2; an acked event is not redelivered,
// and delivery 2's consumer waits FetchWait (longer than AckWait) for
// nothing and leaves the rows as they were. Either way the rows after
// delivery 2 are the model's, so the table equals the harness's.
func expectBroker(s Settings, c Condition) []Delivery {
	ms := wr.Deliveries(c.Pattern, c.CrashAt, s.Deliveries)
	out := make([]Delivery, 0, len(ms))
	delivered, acked := uint64(0), false
	for i, m := range ms {
		d := Delivery{Delivery: i + 1, ExitCode: protocol.ExitACK, FollowUpJobs: m.After.Jobs, ProcessedEvents: m.After.Processed, CrashedAt: m.CrashedAt, Points: m.Points}
		b := &BrokerDelivery{}
		if i == 0 {
			b.Published = &PublishFacts{Seq: 1}
		}
		switch {
		case acked:
			prev := out[i-1]
			d.FollowUpJobs, d.ProcessedEvents, d.Points = prev.FollowUpJobs, prev.ProcessedEvents, []string{}
			b.Consumer = &ConsumerFacts{}
		case m.CrashedAt != "":
			d.ExitCode = protocol.ExitCrash
			delivered++
		default:
			delivered++
			acked = true
			b.Consumer = &ConsumerFacts{Fetched: true, NumDelivered: delivered, Redelivered: delivered > 1, Acked: true}
		}
		b.State = broker.State{Messages: 1, LastSeq: 1, Delivered: delivered}
		if acked {
			b.State.AckFloor = 1
		} else {
			b.State.NumAckPending = 1
		}
		d.Broker = b
		out = append(out, d)
	}
	return out
}

// runBroker delivers one condition's event through a broker of its own:
// start it, publish the event with its id as Nats-Msg-Id, run a consumer
// process per delivery, and read the broker's state after each.
func (p *plan) runBroker(ctx context.Context, env scenario.Env, c Condition) error {
	b, err := broker.Lookup(p.s.Broker.Name)
	if err != nil {
		return err
	}
	fresh, err := env.Fresh(ctx, "idemlab-redelivery-", DBName)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	defer fresh.Drop()
	dir := env.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	tr, err := b.Start(ctx, *p.s.Broker, dir)
	if err != nil {
		return fmt.Errorf("%w: %s: start the broker: %w", errclass.ErrHarness, c.Name, err)
	}
	defer tr.Close()
	data, err := json.Marshal(p.s.Event())
	if err != nil {
		return err
	}
	pub, err := tr.Publish(p.s.EventID, data)
	if err != nil {
		return fmt.Errorf("%w: %s: publish: %w", errclass.ErrHarness, c.Name, err)
	}
	db := fresh.Target
	for d := 1; d <= p.s.Deliveries; d++ {
		spec := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("delivery %d", d),
			Worker: wr.ConsumerName, Args: p.s.ConsumeArgs(c, db, tr.URL()).Argv(),
		}
		if d == 1 {
			spec.CrashAt = c.CrashAt
		}
		proc, err := env.Runner.Run(ctx, spec)
		if err != nil {
			return fmt.Errorf("%s delivery %d: %w", c.Name, d, err)
		}
		rows, err := readState(ctx, fresh)
		if err != nil {
			return fmt.Errorf("%w: %s delivery %d: %w", errclass.ErrHarness, c.Name, d, err)
		}
		st, err := tr.State()
		if err != nil {
			return fmt.Errorf("%w: %s delivery %d: the broker's state: %w", errclass.ErrHarness, c.Name, d, err)
		}
		o := Observation{Scenario: Name, Condition: c.Name, Delivery: d, ProcessID: proc.Record.ID, DB: db, Rows: rows,
			Broker: &BrokerObservation{URL: tr.URL(), State: st}}
		if d == 1 {
			srv := tr.Server()
			o.Broker.Published, o.Broker.Server = &pub, &srv
		}
		if err := env.Recorder.Observe(o); err != nil {
			return fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
		}
	}
	return nil
}

// BrokerObservation is what the parent recorded of the broker on one
// delivery.
type BrokerObservation struct {
	// URL is where the consumer connected; its command line names it.
	URL   string       `json:"url"`
	State broker.State `json:"state"`
	// Published and Server are delivery 1's: the publish ack, and what the
	// broker process said when it was ready.
	Published *broker.Published `json:"published,omitempty"`
	Server    *broker.Server    `json:"server,omitempty"`
}

// foldBroker derives a broker delivery's facts from its observation and
// its consumer's report, and checks what the settings fix.
func (f *folder) foldBroker(ln line, p *results.Process, rep *wr.Result, d *Delivery) {
	o := ln.o.Broker
	if f.st.Broker == nil {
		if o != nil {
			f.c.Obs(ln.l, "broker", "recorded, but the run had no broker")
		}
		return
	}
	if o == nil {
		f.c.Obs(ln.l, "broker", "missing: a run with --broker %s records the broker's state after each delivery", f.st.Broker.Name)
		return
	}
	b := &BrokerDelivery{State: o.State}
	if ln.o.Delivery == 1 {
		switch pub := o.Published; {
		case pub == nil:
			f.c.Obs(ln.l, "broker.published", "missing: delivery 1 records the publish ack")
		case pub.MsgID != f.st.EventID || pub.Stream != f.st.Broker.Stream:
			f.c.Obs(ln.l, "broker.published", "is message %q on stream %q; the settings publish %q on %q", pub.MsgID, pub.Stream, f.st.EventID, f.st.Broker.Stream)
		default:
			b.Published = &PublishFacts{Seq: pub.Seq, Duplicate: pub.Duplicate}
		}
		if o.Server == nil {
			f.c.Obs(ln.l, "broker.server", "missing: delivery 1 records what the broker said when it was ready")
		}
	} else if o.Published != nil || o.Server != nil {
		f.c.Obs(ln.l, "broker", "delivery %d records a publish or a server start; only delivery 1 does", ln.o.Delivery)
	}
	if rep != nil {
		switch c := rep.Broker; {
		case c == nil:
			f.c.Proc(*p, "stdout", "%s acknowledged without the broker's word", p.Label)
		case c.Fetched && (c.Meta == nil || c.MsgID != f.st.EventID || c.Meta.Stream != f.st.Broker.Stream || c.Meta.Consumer != f.st.Broker.Consumer):
			f.c.Proc(*p, "stdout", "%s fetched message %q (%s), not the settings' %q from %s/%s", p.Label, c.MsgID, results.Compact(c.Meta), f.st.EventID, f.st.Broker.Stream, f.st.Broker.Consumer)
		case c.Fetched:
			b.Consumer = &ConsumerFacts{Fetched: true, NumDelivered: c.Meta.NumDelivered, Redelivered: c.Redelivered, Acked: c.Acked()}
			if c.Redelivered != (c.Meta.NumDelivered > 1) {
				f.c.Proc(*p, "stdout", "%s says redelivered=%v with a delivery count of %d", p.Label, c.Redelivered, c.Meta.NumDelivered)
			}
		default:
			b.Consumer = &ConsumerFacts{}
		}
	}
	d.Broker = b
}
