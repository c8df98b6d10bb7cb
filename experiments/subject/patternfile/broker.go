package patternfile

import (
	"fmt"
	"os"
	"slices"

	"idemlab/experiments/broker"
	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/worker/natswire"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
)

// Flags of a pattern run on a broker; redelivery takes the same.
const (
	FlagBroker    = "broker"
	FlagBrokerURL = "broker-url"
)

// Why the classes that a broker run leaves out are left out.
const (
	concurrentNotOnBroker = "on a broker one durable pull consumer hands the event to one consumer at a time, so racers would not race: run it with --broker none"
	powerNotOnBroker      = "a power cut on the machine would cut the broker's store too, which is the broker's own experiment (redelivery --broker nats --broker-power); run it with --broker none"
)

// PatternNATS are the broker settings of a pattern run with --broker
// nats: a one-second AckWait, so a crashed delivery comes back within a
// second; MaxDeliver is each file's max_deliveries (trialSettings).
func PatternNATS(url string) broker.Settings {
	b := broker.DefaultNATS()
	b.Stream, b.Subject, b.Consumer, b.URL = "IDEMLAB_PATTERN", "idemlab.pattern", "deliver", url
	return b
}

// PlanBroker reads --broker and --broker-url into s and leaves out the
// classes a broker does not run, saying why; explore plans its article
// files' broker with it. A class the user named in asked (their faults,
// not the default's) is refused instead, with exit 2 and the reason: a
// run does not quietly drop what it was asked for. A program's deliveries
// on a broker are each a consumer process that runs the program
// (pattern.consume-program).
func (s *Settings) PlanBroker(ov map[string]string, asked []string) error {
	name, url := ov[FlagBroker], ov[FlagBrokerURL]
	if name == "" || name == broker.None {
		if url != "" {
			return fmt.Errorf("%w: --%s needs --%s %s", errclass.ErrUsage, FlagBrokerURL, FlagBroker, broker.NATS)
		}
		return nil
	}
	if _, err := broker.Lookup(name); err != nil {
		return fmt.Errorf("%w: --%s: %w", errclass.ErrUsage, FlagBroker, err)
	}
	bs := PatternNATS(url)
	s.Broker = &bs
	for _, drop := range []NotRun{{Fault: wp.FaultConcurrent, Reason: concurrentNotOnBroker}, {Fault: wp.FaultPower, Reason: powerNotOnBroker}} {
		if slices.Contains(asked, drop.Fault) {
			return fmt.Errorf("%w: %s.faults: %s: not on --%s %s: %s", errclass.ErrUsage, Name, drop.Fault, FlagBroker, name, drop.Reason)
		}
		if i := slices.Index(s.Faults, drop.Fault); i >= 0 {
			s.Faults = slices.Delete(slices.Clone(s.Faults), i, i+1)
			drop.Where = "--broker " + name
			s.NotRun = append(s.NotRun, drop)
		}
	}
	if len(s.Faults) == 0 {
		return fmt.Errorf("%w: %s.faults: none of the classes asked for runs on --broker %s (points and random do)", errclass.ErrUsage, Name, name)
	}
	return nil
}

// findBroker refuses a run on a broker whose server binary is missing
// before any trial, as a usage error that says how to build it, where the
// first trial would fail the run as the harness's fault. A user's server
// (--broker-url) needs none.
func (s Settings) findBroker() error {
	if s.Broker == nil || s.Broker.URL != "" || s.Broker.Name != broker.NATS {
		return nil
	}
	if _, err := broker.FindNATSServer(); err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrUsage, err)
	}
	return nil
}

// TrialBroker is what the parent recorded of a trial's broker: where the
// consumers connected, what the broker process said when it was ready,
// and its answer to the harness's publish of the event.
type TrialBroker struct {
	URL       string            `json:"url"`
	Server    *broker.Server    `json:"server,omitempty"`
	Published *broker.Published `json:"published,omitempty"`
}

// trialSettings are the broker settings of trial o of condition c: the
// pattern's max_deliveries is the consumer's MaxDeliver, so the broker
// gives the event up where the harness would stop redelivering. On a
// user's server (--broker-url) each trial has a stream, subject and
// consumer named after its condition's place and its trial, so no two
// trials share one and none touches the user's own.
func (s Settings) trialSettings(c Condition, trial int) broker.Settings {
	b := *s.Broker
	for _, p := range s.Patterns {
		if p.File.Name == c.Pattern {
			b.MaxDeliver = p.MaxDeliveries
		}
	}
	if b.URL != "" {
		k := slices.IndexFunc(s.Conditions, func(x Condition) bool { return x.Name == c.Name }) + 1
		b.Stream = fmt.Sprintf("IDEMLAB_PATTERN_%d_%d", k, trial)
		b.Subject = fmt.Sprintf("idemlab.pattern.%d.%d", k, trial)
	}
	return b
}

// ConsumeArgs are delivery d's arguments on the trial's broker: the
// delivery's, and the trial's stream and consumer at the URL recorded.
func ConsumeArgs(s Settings, c Condition, o Observation, d Delivery) wp.ConsumeArgs {
	b := s.trialSettings(c, o.Trial)
	return wp.ConsumeArgs{Deliver: Args(s, o, d), Sub: natswire.Sub{URL: o.Broker.URL, Stream: b.Stream, Consumer: b.Consumer, FetchWait: b.FetchWait()}}
}

// startBroker starts the trial's broker, with its stream and durable
// consumer, and publishes the event with its id as Nats-Msg-Id.
func (t *trial) startBroker() error {
	b, err := broker.Lookup(t.r.s.Broker.Name)
	if err != nil {
		return err
	}
	dir := t.r.env.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	if t.br, err = b.Start(t.r.ctx, t.r.s.trialSettings(t.c, t.o.Trial), dir); err != nil {
		return fmt.Errorf("start the broker: %w", err)
	}
	srv := t.br.Server()
	t.o.Broker = &TrialBroker{URL: t.br.URL(), Server: &srv}
	pub, err := t.br.Publish(t.r.s.EventID, wp.EventData(t.r.s.EventID))
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	t.o.Broker.Published = &pub
	return nil
}

// brokerWord reads the broker's state after the trial's last delivery and
// records it there; the event is done once the broker's ack floor has
// reached its message: it was acked, by this delivery or an earlier one.
func (t *trial) brokerWord() (bool, error) {
	return t.brokerOn(&t.o.Deliveries[len(t.o.Deliveries)-1])
}

// brokerOn reads the broker's state after delivery d and records it in d.
func (t *trial) brokerOn(d *Delivery) (bool, error) {
	st, err := t.br.State()
	if err != nil {
		return false, fmt.Errorf("%w: %s trial %d: the broker's state: %w", errclass.ErrHarness, t.c.Name, t.o.Trial, err)
	}
	d.Broker = &st
	return st.AckFloor >= 1, nil
}

// checkBroker is the fold's reading of a trial on a broker, and its
// oracle. From the settings: the event is published once, as sequence 1
// of the trial's stream, and never as a duplicate. Each delivery i (from
// 0) is the broker's (i+1)-th: it has delivered the message i+1 times, the
// consumer's report says so with the redelivered flag set from the
// second on, and the message is acked from the delivery that acked it on
// (its exit, or its ack line) and pending until then: ack floor 1 and
// nothing pending, or ack floor 0 and one message pending.
func (f *folder) checkBroker(t *trialLine) {
	o := t.o
	switch {
	case f.st.Broker == nil && o.Broker != nil:
		f.c.Obs(t.l, "broker", "recorded, but the run had no broker")
		return
	case f.st.Broker == nil:
		return
	case o.Broker == nil:
		f.c.Obs(t.l, "broker", "missing: a run with --broker %s records the trial's broker", f.st.Broker.Name)
		return
	}
	ts := f.st.trialSettings(t.c, o.Trial)
	if ts.URL != "" && o.Broker.URL != ts.URL {
		f.c.Obs(t.l, "broker.url", "is %q, but the run used the server --%s named, %q", o.Broker.URL, FlagBrokerURL, ts.URL)
	}
	if ts.URL == "" && o.Broker.Server == nil {
		f.c.Obs(t.l, "broker.server", "missing: a trial records what its broker said when it was ready")
	}
	if pub := o.Broker.Published; pub == nil || pub.MsgID != f.st.EventID || pub.Stream != ts.Stream || pub.Seq != 1 || pub.Duplicate {
		f.c.Obs(t.l, "broker.published", "is %s; the settings publish %q once, as sequence 1 of stream %q", results.Compact(pub), f.st.EventID, ts.Stream)
	}
	acked := false
	var n uint64 // the broker's deliveries so far
	for i, d := range o.Deliveries {
		p, ok := f.brokerProcess(t, d)
		if !ok {
			continue
		}
		if f.acked(t, i, p) {
			acked = true
		}
		// A consumer the harness killed after a delay may have died
		// before its fetch reached the broker, or after.
		killed := p.Signal != "" && p.KilledBy == "harness" && f.killPlanned(t, i)
		if n++; killed && d.Broker != nil && d.Broker.Delivered == n-1 {
			n--
		}
		want := broker.State{Messages: 1, LastSeq: 1, Delivered: n, NumAckPending: 1}
		if n == 0 {
			want.NumAckPending, want.NumPending = 0, 1
		}
		if acked {
			want.AckFloor, want.NumAckPending = 1, 0
		}
		field := results.Field("deliveries", i, "broker")
		if got := d.Broker; got == nil {
			f.c.Obs(t.l, field, "missing: the broker's state is read after each delivery")
		} else if *got != want {
			f.c.Obs(t.l, field, "is %s after delivery %d, but the settings and the deliveries' acks give %s", results.Compact(got), d.Number, results.Compact(want))
		}
		f.checkConsumed(t, p, i, n, ts)
	}
}

// checkConsumed checks what a consumer that reported a result says the
// broker told it: the trial's message, delivered for the n-th time,
// redelivered from the second, and acked when it exited 0.
func (f *folder) checkConsumed(t *trialLine, p results.Process, i int, n uint64, ts broker.Settings) {
	if p.Signal != "" || p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitStepFailed {
		return
	}
	rep, err := protocol.ParseReport(p.Stdout)
	if err != nil {
		return // the delivery's own check names it
	}
	c, err := consumedOf(p, rep.Result)
	if err != nil {
		return
	}
	switch {
	case c == nil:
		f.c.Proc(p, "stdout", "delivery %d ran on the broker without the broker's word", i+1)
	case !c.Fetched || c.Meta == nil:
		f.c.Proc(p, "stdout", "delivery %d fetched nothing, but the broker had the event to deliver", i+1)
	case c.MsgID != f.st.EventID || c.Meta.Stream != ts.Stream || c.Meta.Consumer != ts.Consumer:
		f.c.Proc(p, "stdout", "delivery %d fetched message %q (%s), not the settings' %q from %s/%s", i+1, c.MsgID, results.Compact(c.Meta), f.st.EventID, ts.Stream, ts.Consumer)
	case c.Meta.NumDelivered != n || c.Redelivered != (n > 1):
		f.c.Proc(p, "stdout", "delivery %d says the broker delivered it %d times (redelivered=%v); it is the broker's delivery %d", i+1, c.Meta.NumDelivered, c.Redelivered, n)
	case p.ExitCode == protocol.ExitACK && !c.Acked():
		f.c.Proc(p, "stdout", "delivery %d exited 0, but the server did not accept its ack (%s)", i+1, results.Compact(c.Ack))
	}
}

// killedOnBroker says whether delivery i is a consumer on a broker that
// the harness killed after a delay, as the trial planned: the kill may
// land between the server's answer to its ack and its ack line, so the
// broker's word says whether it acked.
func (f *folder) killedOnBroker(t *trialLine, i int, p results.Process) bool {
	return f.st.Broker != nil && p.Signal != "" && p.KilledBy == "harness" && f.killPlanned(t, i)
}

// acked says whether delivery i acknowledged the event: ackedRecord, or
// on a broker, for a consumer killed as planned, the broker's ack floor
// reaching the message at this delivery.
func (f *folder) acked(t *trialLine, i int, p results.Process) bool {
	if !f.killedOnBroker(t, i, p) {
		return ackedRecord(p.ProcessRecord)
	}
	d := t.o.Deliveries[i]
	return d.Broker != nil && d.Broker.AckFloor >= 1 && (i == 0 || t.o.Deliveries[i-1].Broker == nil || t.o.Deliveries[i-1].Broker.AckFloor == 0)
}

// ackedBefore says whether delivery i acknowledged the event before it
// ended otherwise than by exiting 0: at an ack step (ackedEarly), or a
// killed consumer the broker counts acked.
func (f *folder) ackedBefore(t *trialLine, i int, p results.Process) bool {
	return ackedEarly(p.ProcessRecord) || f.killedOnBroker(t, i, p) && f.acked(t, i, p)
}
