package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
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

// FlagBrokerFaults adds BrokerFaultConditions to a --broker run.
const FlagBrokerFaults = "broker-faults"

// The broker faults.
const (
	// FaultKillAfterPublish SIGKILLs the broker once it has acked the
	// publish, and starts it again on the same store.
	FaultKillAfterPublish = "kill-after-publish"
	// FaultRepublishInWindow has the event published by a publisher
	// process that crashes after the broker's publish ack, before it
	// records the publish in its outbox row; a second publisher, finding
	// no row, publishes it again with the same Nats-Msg-Id at once,
	// inside the dedup window.
	FaultRepublishInWindow = "republish-in-window"
	// FaultRepublishAfterWindow is the same with the second publisher
	// after the condition's dedup window.
	FaultRepublishAfterWindow = "republish-after-window"
	// FaultSlowWork makes delivery 1 work on for HoldMS, longer than
	// AckWait, after its commits and before its ack; delivery 2 is started
	// beside it.
	FaultSlowWork = "ack-wait-shorter-than-work"
	// FaultInProgress is FaultSlowWork with delivery 1 telling the broker
	// every quarter AckWait that it is still working (+WPI).
	FaultInProgress = "in-progress"
	// FaultMaxDeliver crashes delivery 1 under a MaxDeliver of 1: the
	// broker gives the event up.
	FaultMaxDeliver = "max-deliver-1"
	// FaultAckFirst acks delivery 1 as soon as it comes, before the work,
	// and crashes it after the job's commit: at most once.
	FaultAckFirst = "ack-first"
)

// republishes says whether a fault's event is published by publisher
// processes rather than by the harness.
func republishes(fault string) bool {
	return fault == FaultRepublishInWindow || fault == FaultRepublishAfterWindow
}

// besides says whether a fault's delivery 2 runs beside delivery 1.
func besides(fault string) bool { return fault == FaultSlowWork || fault == FaultInProgress }

// ShortWindowMS is the dedup window of the republish-after-window
// condition, and WindowMarginMS how long after it the republish comes.
const (
	ShortWindowMS  = 300
	WindowMarginMS = 200
)

// BrokerFaultConditions are the conditions --broker-faults adds, on the
// separate commits, whose duplicate a second delivery would show.
func BrokerFaultConditions(b broker.Settings) []Condition {
	return []Condition{
		{Name: "separate-commit/broker-killed-after-publish", Pattern: wr.SeparateCommit, BrokerFault: FaultKillAfterPublish},
		{Name: "separate-commit/republish-in-window", Pattern: wr.SeparateCommit, BrokerFault: FaultRepublishInWindow},
		{Name: "separate-commit/republish-after-window", Pattern: wr.SeparateCommit, BrokerFault: FaultRepublishAfterWindow, DuplicateWindowMS: ShortWindowMS},
		{Name: "separate-commit/" + FaultSlowWork, Pattern: wr.SeparateCommit, BrokerFault: FaultSlowWork, HoldMS: 2 * b.AckWaitMS},
		{Name: "separate-commit/" + FaultInProgress, Pattern: wr.SeparateCommit, BrokerFault: FaultInProgress, HoldMS: 2 * b.AckWaitMS, ProgressMS: b.AckWaitMS / 4},
		{Name: "separate-commit/crash-after-job-commit/" + FaultMaxDeliver, Pattern: wr.SeparateCommit, CrashAt: wr.PointAfterJobCommit, BrokerFault: FaultMaxDeliver, MaxDeliver: 1},
		{Name: "separate-commit/crash-after-job-commit/" + FaultAckFirst, Pattern: wr.SeparateCommit, CrashAt: wr.PointAfterJobCommit, BrokerFault: FaultAckFirst},
		ttlClaimCondition(b, "ttl-shorter-than-work", b.AckWaitMS/4),
		ttlClaimCondition(b, "ttl-longer-than-work", 4*b.AckWaitMS),
	}
}

// FlagBrokerURL names a NATS server of the user's instead of one per
// condition.
const FlagBrokerURL = "broker-url"

// trialSettings are the broker settings of condition c's trial. On a
// user's server (--broker-url) each condition has a stream, subject and
// consumer named after its place in the settings, so no two trials share
// one and none touches the user's own.
func (s Settings) trialSettings(c Condition) broker.Settings {
	b := *s.Broker
	if b.URL != "" {
		k := slices.IndexFunc(s.Conditions, func(x Condition) bool { return x.Name == c.Name }) + 1
		b.Stream = fmt.Sprintf("IDEMLAB_REDELIVERY_%d", k)
		b.Subject = fmt.Sprintf("idemlab.redelivery.%d", k)
	}
	if c.DuplicateWindowMS > 0 {
		b.DuplicateWindowMS = c.DuplicateWindowMS
	}
	if c.MaxDeliver > 0 {
		b.MaxDeliver = c.MaxDeliver
	}
	if c.SyncInterval != "" {
		b.SyncInterval = c.SyncInterval
	}
	return b
}

// BrokerDelivery is the broker's word on one delivery: what the consumer
// process was told (a delivery that crashed before its ack told nothing),
// and the stream's and consumer's state the parent read once the process
// had exited.
type BrokerDelivery struct {
	Consumer *ConsumerFacts `json:"consumer,omitempty"`
	// Published is the publish ack, on delivery 1; Republished the
	// second publish's, and Restarted whether the broker was killed and
	// started again, on a fault's delivery 1.
	Published   *PublishFacts `json:"published,omitempty"`
	Republished *PublishFacts `json:"republished,omitempty"`
	Restarted   bool          `json:"restarted,omitempty"`
	// Publishers are a republish condition's publisher processes, in
	// order, on delivery 1.
	Publishers []PublisherFacts `json:"publishers,omitempty"`
	// Concurrent says the delivery's process started before the previous
	// delivery's had ended.
	Concurrent bool         `json:"concurrent,omitempty"`
	State      broker.State `json:"state"`
	// Power is what a power condition's cut left, on delivery 1.
	Power *PowerFacts `json:"power,omitempty"`
}

// ConsumerFacts are what a consumer that reached its ack reported.
type ConsumerFacts struct {
	Fetched      bool   `json:"fetched"`
	NumDelivered uint64 `json:"num_delivered,omitempty"`
	Redelivered  bool   `json:"redelivered"`
	Acked        bool   `json:"acked"`
	// InProgress counts the answered in-progress notices.
	InProgress int `json:"in_progress,omitempty"`
	// ClaimWon is a ttl-claim consumer's claim, and Nacked whether the
	// server accepted the nak of one that lost it.
	ClaimWon *bool `json:"claim_won,omitempty"`
	Nacked   bool  `json:"nacked,omitempty"`
}

// PublisherFacts are what one publisher process did: how it ended and,
// when it got that far, the stream's answer to its publish.
type PublisherFacts struct {
	Publisher int    `json:"publisher"`
	ExitCode  int    `json:"exit_code"`
	CrashedAt string `json:"crashed_at,omitempty"`
	Skipped   bool   `json:"skipped,omitempty"`
	Seq       uint64 `json:"seq,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// publishArgs are a publisher's arguments in condition c's trial.
func (s Settings) publishArgs(c Condition, db, url string) wr.PublishArgs {
	return wr.PublishArgs{DB: db, Backend: s.Backend, Event: s.Event(), URL: url, Subject: s.trialSettings(c).Subject}
}

// PublishFacts are the stream's answer to the harness's publish.
type PublishFacts struct {
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

// ConsumeArgs are a broker delivery's worker arguments for the trial's
// server at url.
func (s Settings) ConsumeArgs(c Condition, db, url string) wr.ConsumeArgs {
	b := s.trialSettings(c)
	a := wr.ConsumeArgs{Deliver: s.Args(c, db), Sub: natswire.Sub{URL: url, Stream: b.Stream, Consumer: b.Consumer, FetchWait: b.FetchWait()}}
	return a
}

// consumeArgs are delivery d's arguments: a slow condition's delivery 1
// holds.
func (s Settings) consumeArgs(c Condition, d int, db, url string) wr.ConsumeArgs {
	a := s.ConsumeArgs(c, db, url)
	if d == 1 {
		a.Hold = time.Duration(c.HoldMS) * time.Millisecond
		a.Progress = time.Duration(c.ProgressMS) * time.Millisecond
		a.AckFirst = c.BrokerFault == FaultAckFirst
	}
	a.ClaimTTL = time.Duration(c.ClaimTTLMS) * time.Millisecond
	return a
}

// expectBroker is the oracle on a broker. It simulates the broker's
// queue from the settings and runs each delivery that gets a message
// through the same commit model as the harness's redelivery, so the rows
// equal the harness's wherever the event is delivered twice:
//   - a consumer gets the message whose earlier consumer died before its
//     ack (the broker redelivers it after AckWait, its count raised), or
//     else the next message never delivered, or else nothing: an acked
//     message is not delivered again, and a consumer that gets nothing
//     leaves the rows as they were;
//   - a republish inside the dedup window is answered as a duplicate of
//     sequence 1; one after the window is a second message, delivered
//     with a count of 1 (not a redelivery), which the pattern's processed
//     check must absorb;
//   - a broker SIGKILLed after its publish ack loses nothing: the store's
//     writes are in the page cache, which outlives the process;
//   - a consumer that works longer than AckWait has its message
//     redelivered to the next consumer while it works; its late ack is
//     accepted, as nats-server answers an ack of a message acked already
//     (nats-server #5113). One that says +WPI every quarter AckWait is not
//     redelivered, and the consumer beside it gets nothing;
//   - a message delivered MaxDeliver times and not acked is given up
//     after AckWait: no consumer gets it again and it is no longer
//     pending, but the ack floor CONSUMER.INFO reports stays below it:
//     nats-server moves its in-memory floor, and the info reads the
//     store's, which only acks move. (The first version of this oracle
//     predicted the floor past it; the broker said otherwise.)
//   - a consumer that acks as soon as the message comes and then crashes
//     loses the event: the broker counts it acked and never delivers it
//     again, and the rows stay as the crash left them.
func expectBroker(s Settings, c Condition) []Delivery {
	if powerCut(c.BrokerFault) {
		return expectPower(s, c)
	}
	limit := uint64(s.trialSettings(c).MaxDeliver)
	var model wr.Model
	fresh := []uint64{1}
	b := &BrokerDelivery{Published: &PublishFacts{Seq: 1}, Restarted: c.BrokerFault == FaultKillAfterPublish}
	if republishes(c.BrokerFault) {
		second := PublisherFacts{Publisher: 2, ExitCode: protocol.ExitACK, Seq: 1, Duplicate: true}
		if c.BrokerFault == FaultRepublishAfterWindow {
			second = PublisherFacts{Publisher: 2, ExitCode: protocol.ExitACK, Seq: 2}
			fresh = append(fresh, 2)
		}
		b.Published = nil
		b.Publishers = []PublisherFacts{{Publisher: 1, ExitCode: protocol.ExitCrash, CrashedAt: wr.PointAfterPublishAck}, second}
	}
	st := broker.State{Messages: uint64(len(fresh)), LastSeq: uint64(len(fresh))}
	count := map[uint64]uint64{}
	var unacked uint64
	rows := wr.Counts{}
	out := make([]Delivery, 0, s.Deliveries)
	for i := range s.Deliveries {
		if i > 0 {
			b = &BrokerDelivery{Concurrent: besides(c.BrokerFault)}
		}
		d := Delivery{Delivery: i + 1, ExitCode: protocol.ExitACK, Points: []string{}, Broker: b}
		var seq uint64
		if unacked > 0 && limit > 0 && count[unacked] >= limit {
			unacked = 0
		}
		switch {
		case unacked > 0:
			seq, unacked = unacked, 0
		case c.BrokerFault == FaultSlowWork && i == 1:
			seq = 1
		case len(fresh) > 0:
			seq, fresh = fresh[0], fresh[1:]
		}
		if seq == 0 {
			b.Consumer = &ConsumerFacts{}
		} else {
			at := ""
			if i == 0 {
				at = c.CrashAt
			}
			m := model.Deliver(c.Pattern, at)
			rows, d.Points, d.CrashedAt = m.After, m.Points, m.CrashedAt
			count[seq]++
			st.Delivered++
			switch {
			case m.CrashedAt != "" && i == 0 && c.BrokerFault == FaultAckFirst:
				// Acked before the work: the crash loses the event.
				d.ExitCode = protocol.ExitCrash
				st.AckFloor = max(st.AckFloor, seq)
			case m.CrashedAt != "":
				d.ExitCode, unacked = protocol.ExitCrash, seq
			default:
				b.Consumer = &ConsumerFacts{Fetched: true, NumDelivered: count[seq], Redelivered: count[seq] > 1, Acked: true}
				if i == 0 {
					b.Consumer.InProgress = wr.Notices(time.Duration(c.HoldMS)*time.Millisecond, time.Duration(c.ProgressMS)*time.Millisecond)
				}
				st.AckFloor = max(st.AckFloor, seq)
			}
		}
		d.FollowUpJobs, d.ProcessedEvents = rows.Jobs, rows.Processed
		st.NumAckPending, st.NumPending = 0, uint64(len(fresh))
		if unacked > 0 {
			st.NumAckPending = 1
		}
		b.State = st
		out = append(out, d)
	}
	if besides(c.BrokerFault) {
		// Both ran before the parent read anything: each line holds the
		// state after both.
		out[0].Broker.State = out[1].Broker.State
	}
	if c.Pattern == wr.TTLClaim {
		expectTTLClaim(s, c, out)
	}
	return out
}

// preflight finds the idemlab-nats binary a run with its own brokers
// starts, or builds it for `go run` (broker.EnsureNATSServer), before the
// output folder is made: a machine without it is a usage error, not a
// harness failure at the first condition.
func (p *plan) preflight(ctx context.Context, env scenario.PreflightEnv) error {
	b := p.s.Broker
	var err error
	b.Binary, b.BinarySHA256, err = broker.Preflight(ctx, b.Name, b.URL, env.Executable, env.Workdir, env.Notice)
	return err
}

// runBroker delivers one condition's event through a broker of its own:
// start it, publish the event with its id as Nats-Msg-Id, apply the
// condition's fault, run a consumer process per delivery, and read the
// broker's state after each.
func (p *plan) runBroker(ctx context.Context, env scenario.Env, c Condition) error {
	if powerCut(c.BrokerFault) {
		return p.runBrokerPower(ctx, env, c)
	}
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
	tr, err := b.Start(ctx, p.s.trialSettings(c), dir)
	if err != nil {
		return fmt.Errorf("%w: %s: start the broker: %w", errclass.ErrHarness, c.Name, err)
	}
	defer tr.Close()
	db := fresh.Target
	first := &BrokerObservation{}
	if republishes(c.BrokerFault) {
		srv := tr.Server()
		first.Server = &srv
		if err := p.publishers(ctx, env, tr, c, db); err != nil {
			return err
		}
	} else if err := p.publish(ctx, tr, c, first); err != nil {
		return fmt.Errorf("%w: %s: %w", errclass.ErrHarness, c.Name, err)
	}
	spec := func(d int) harness.Spec {
		s := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("delivery %d", d),
			Worker: wr.ConsumerName, Args: p.s.consumeArgs(c, d, db, tr.URL()).Argv(),
		}
		if d == 1 {
			s.CrashAt = c.CrashAt
		}
		return s
	}
	// A slow condition's two deliveries run side by side: the second
	// waits for the broker's redelivery while the first works on.
	var procs []*harness.Proc
	together := 1
	if besides(c.BrokerFault) {
		together = 2
	}
	for d := 1; d <= p.s.Deliveries; d += together {
		waited, err := p.deliverTogether(ctx, env, tr, c, spec, d, together)
		if err != nil {
			return err
		}
		procs = append(procs, waited...)
		rows, err := readState(ctx, fresh)
		if err != nil {
			return fmt.Errorf("%w: %s delivery %d: %w", errclass.ErrHarness, c.Name, d, err)
		}
		st, err := tr.State()
		if err != nil {
			return fmt.Errorf("%w: %s delivery %d: the broker's state: %w", errclass.ErrHarness, c.Name, d, err)
		}
		for k := range together {
			o := Observation{Scenario: Name, Condition: c.Name, Delivery: d + k, ProcessID: procs[d+k-1].Record.ID, DB: db, Rows: rows,
				Broker: &BrokerObservation{URL: tr.URL(), State: st}}
			if d+k == 1 {
				first.URL, first.State = tr.URL(), st
				o.Broker = first
			}
			if err := engine.Record(env.Recorder, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliverTogether starts deliveries d to d+together-1, each after the
// broker has made the one before it (a consumer started beside a working
// one must not take the first delivery), and waits for each on its own.
func (p *plan) deliverTogether(ctx context.Context, env scenario.Env, tr broker.Trial, c Condition, spec func(int) harness.Spec, d, together int) ([]*harness.Proc, error) {
	var hs []*harness.Handle
	// A delivery started and then abandoned is still waited for, so
	// no consumer outlives the error.
	abandon := func(err error) error {
		for _, h := range hs {
			h.Wait()
		}
		return err
	}
	for k := range together {
		if k > 0 {
			if err := fetched(ctx, tr, uint64(d+k-1), p.s.Broker.FetchWait()); err != nil {
				return nil, abandon(fmt.Errorf("%w: %s delivery %d: %w", errclass.ErrHarness, c.Name, d+k-1, err))
			}
		}
		h, err := env.Runner.Start(ctx, spec(d+k))
		if err != nil {
			return nil, abandon(fmt.Errorf("%s delivery %d: %w", c.Name, d+k, err))
		}
		hs = append(hs, h)
	}
	// Each is waited for on its own, so each record's end is its own.
	waited := make([]*harness.Proc, len(hs))
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for k, h := range hs {
		wg.Go(func() { waited[k], errs[k] = h.Wait() })
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s delivery %d: %w", c.Name, d+k, err)
		}
	}
	return waited, nil
}

// fetched waits until the broker says it has made n deliveries, so a
// consumer started beside a working one cannot take the first delivery.
func fetched(ctx context.Context, tr broker.Trial, n uint64, limit time.Duration) error {
	for end := time.Now().Add(limit); ; {
		st, err := tr.State()
		if err != nil {
			return err
		}
		if st.Delivered >= n {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("the broker made %d deliveries in %s, want %d", st.Delivered, limit, n)
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// publishers runs a republish condition's two publisher processes: the
// first crashes after the broker's publish ack, before its outbox row;
// the second, after the condition's dedup window or at once, finds no row
// and publishes again. Each gets an observation line of its own.
func (p *plan) publishers(ctx context.Context, env scenario.Env, tr broker.Trial, c Condition, db string) error {
	for n := 1; n <= 2; n++ {
		spec := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("publisher %d", n),
			Worker: wr.PublisherName, Args: p.s.publishArgs(c, db, tr.URL()).Argv(),
		}
		if n == 1 {
			spec.CrashAt = wr.PointAfterPublishAck
		} else if c.BrokerFault == FaultRepublishAfterWindow {
			wait := time.Duration(p.s.trialSettings(c).DuplicateWindowMS+WindowMarginMS) * time.Millisecond
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		proc, err := env.Runner.Run(ctx, spec)
		if err != nil {
			return fmt.Errorf("%s publisher %d: %w", c.Name, n, err)
		}
		o := Observation{Scenario: Name, Condition: c.Name, Publisher: n, ProcessID: proc.Record.ID, DB: db, Broker: &BrokerObservation{URL: tr.URL()}}
		if err := engine.Record(env.Recorder, o); err != nil {
			return err
		}
	}
	return nil
}

// publish publishes the condition's event and applies its fault: a
// restart of the broker. What the broker answered goes into o.
func (p *plan) publish(ctx context.Context, tr broker.Trial, c Condition, o *BrokerObservation) error {
	data, err := json.Marshal(p.s.Event())
	if err != nil {
		return err
	}
	pub, err := tr.Publish(p.s.EventID, data)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	o.Published = &pub
	srv := tr.Server()
	o.Server = &srv
	switch c.BrokerFault {
	case FaultKillAfterPublish:
		if err := tr.Restart(ctx); err != nil {
			return fmt.Errorf("restart the broker: %w", err)
		}
		again := tr.Server()
		o.Restarted = &again
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
	// Republished and Restarted are a fault's, on delivery 1: the second
	// publish's ack, and the restarted broker's ready line.
	Republished *broker.Published `json:"republished,omitempty"`
	Restarted   *broker.Server    `json:"restarted,omitempty"`
	// Power is a power condition's cut, on delivery 1.
	Power *BrokerPower `json:"power,omitempty"`
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
	ts := f.st.trialSettings(ln.cond)
	if f.st.Broker.URL != "" && o.URL != f.st.Broker.URL {
		f.c.Obs(ln.l, "broker.url", "is %q, but the run used the server --%s named, %q", o.URL, FlagBrokerURL, f.st.Broker.URL)
	}
	if ln.o.Delivery == 1 {
		if republishes(ln.cond.BrokerFault) {
			b.Publishers = f.pubs[ln.o.Condition]
		}
		switch pub := o.Published; {
		case pub == nil && republishes(ln.cond.BrokerFault):
		case pub == nil:
			f.c.Obs(ln.l, "broker.published", "missing: delivery 1 records the publish ack")
		case pub.MsgID != f.st.EventID || pub.Stream != ts.Stream:
			f.c.Obs(ln.l, "broker.published", "is message %q on stream %q; the settings publish %q on %q", pub.MsgID, pub.Stream, f.st.EventID, ts.Stream)
		default:
			b.Published = &PublishFacts{Seq: pub.Seq, Duplicate: pub.Duplicate}
		}
		if o.Server == nil {
			f.c.Obs(ln.l, "broker.server", "missing: delivery 1 records what the broker said when it was ready")
		}
		if r := o.Republished; r != nil {
			if r.MsgID != f.st.EventID || r.Stream != ts.Stream {
				f.c.Obs(ln.l, "broker.republished", "is message %q on stream %q; the settings publish %q on %q", r.MsgID, r.Stream, f.st.EventID, ts.Stream)
			}
			b.Republished = &PublishFacts{Seq: r.Seq, Duplicate: r.Duplicate}
		}
		b.Restarted = o.Restarted != nil
		f.checkServer(ln, "broker.server", o.Server, ts)
		f.checkServer(ln, "broker.restarted", o.Restarted, ts)
		if o.Restarted != nil && o.Server != nil && o.Restarted.PID == o.Server.PID {
			f.c.Obs(ln.l, "broker.restarted.pid", "is %d, the first broker's: a restart is a new process", o.Restarted.PID)
		}
	} else if o.Published != nil || o.Server != nil || o.Republished != nil || o.Restarted != nil {
		f.c.Obs(ln.l, "broker", "delivery %d records a publish or a server start; only delivery 1 does", ln.o.Delivery)
	}
	start, err1 := time.Parse(time.RFC3339Nano, p.StartedAt)
	end, err2 := time.Parse(time.RFC3339Nano, p.EndedAt)
	if prev, ok := f.ends[ln.o.Condition]; ok && err1 == nil {
		b.Concurrent = start.Before(prev)
	}
	if err2 == nil {
		f.ends[ln.o.Condition] = end
	}
	if rep != nil {
		switch c := rep.Broker; {
		case c == nil:
			f.c.Proc(*p, "stdout", "%s acknowledged without the broker's word", p.Label)
		case c.Fetched && (c.Meta == nil || c.MsgID != f.st.EventID || c.Meta.Stream != ts.Stream || c.Meta.Consumer != ts.Consumer):
			f.c.Proc(*p, "stdout", "%s fetched message %q (%s), not the settings' %q from %s/%s", p.Label, c.MsgID, results.Compact(c.Meta), f.st.EventID, ts.Stream, ts.Consumer)
		case c.Fetched:
			b.Consumer = &ConsumerFacts{Fetched: true, NumDelivered: c.Meta.NumDelivered, Redelivered: c.Redelivered, Acked: c.Acked(), InProgress: c.InProgress}
			f.foldClaim(ln, p, rep, b.Consumer)
			if c.Redelivered != (c.Meta.NumDelivered > 1) {
				f.c.Proc(*p, "stdout", "%s says redelivered=%v with a delivery count of %d", p.Label, c.Redelivered, c.Meta.NumDelivered)
			}
		default:
			b.Consumer = &ConsumerFacts{}
		}
	}
	f.foldPower(ln, o, b)
	d.Broker = b
}

// checkServer checks what a broker said of its store when it was ready
// against the settings the trial asked for: its sync_interval as
// natswire.SyncLabel states it (a user's server states none of its own).
func (f *folder) checkServer(ln line, field string, srv *broker.Server, ts broker.Settings) {
	if srv == nil {
		return
	}
	want := natswire.SyncLabel(ts.SyncInterval)
	if ts.URL != "" {
		want = broker.ExternalSync
	}
	if srv.SyncInterval != want {
		f.c.Obs(ln.l, field+".sync_interval", "is %q, but the trial asked its broker for sync_interval %q", srv.SyncInterval, want)
	}
}

// publisher folds a publisher's observation line: its process's command
// line, crash point and exit, and its report's publish ack.
func (f *folder) publisher(ln line) {
	o := ln.o
	if !republishes(ln.cond.BrokerFault) || o.Publisher > 2 || o.Broker == nil {
		f.c.Obs(ln.l, "publisher", "%d, but only the two publishers of a republish condition with a broker record one", o.Publisher)
		return
	}
	if want := len(f.pubs[o.Condition]) + 1; o.Publisher != want {
		f.c.Obs(ln.l, "publisher", "is %d, want %d: publishers are recorded in order from 1", o.Publisher, want)
	}
	pf := PublisherFacts{Publisher: o.Publisher}
	p, ok := f.c.Use(f.rec, ln.l, o.ProcessID)
	if !ok {
		f.pubs[o.Condition] = append(f.pubs[o.Condition], pf)
		return
	}
	f.c.Argv(p, wr.PublisherName, f.st.publishArgs(ln.cond, o.DB, o.Broker.URL).Argv())
	env := map[string]string{}
	if o.Publisher == 1 {
		env[protocol.EnvCrashAt] = wr.PointAfterPublishAck
	}
	f.c.Env(p, env)
	pf.ExitCode = p.ExitCode
	if rep, ok := f.c.Report(p); ok {
		pf.CrashedAt = rep.CrashedAt
		if p.ExitCode == protocol.ExitACK {
			var r wr.PublishResult
			if err := results.DecodeStrict(rep.Result, &r); err != nil {
				f.c.Proc(p, "stdout", "the report's result is not a publish result: %v", err)
			} else if pf.Skipped = r.Skipped; r.Ack != nil {
				pf.Seq, pf.Duplicate = r.Ack.Seq, r.Ack.Duplicate
			}
		}
	}
	f.pubs[o.Condition] = append(f.pubs[o.Condition], pf)
}
