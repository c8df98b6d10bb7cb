package redelivery

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
)

// ConsumerName is the registry name of the consumer that takes the event
// from a real broker: it fetches one message from a durable pull
// consumer, delivers it as redelivery.deliver does, and acks after the
// work, synchronously.
const ConsumerName = "redelivery.consume"

// AckTimeout bounds the wait for the server's answer to an ack.
const AckTimeout = 2 * time.Second

// ConsumeArgs are a consumer's arguments: a delivery's, and where to
// fetch from.
type ConsumeArgs struct {
	Deliver Args
	Sub     natswire.Sub
	// Hold is how long the consumer goes on working after the delivery's
	// commits, before its ack: a slow handler.
	Hold time.Duration
	// Progress, when positive, is how often the consumer tells the broker
	// it is still working (+WPI) during Hold.
	Progress time.Duration
	// AckFirst acks as soon as the message comes, before the work: at
	// most once.
	AckFirst bool
	// ClaimTTL, with the ttl-claim pattern, is the TTL of the claim the
	// consumer takes before the work (claimwork.go).
	ClaimTTL time.Duration
}

// Argv is the command line after the worker name.
func (a ConsumeArgs) Argv() []string {
	argv := append(a.Deliver.Argv(), a.Sub.Argv()...)
	if a.Hold > 0 {
		argv = append(argv, "-hold", strconv.FormatInt(a.Hold.Milliseconds(), 10)+"ms")
	}
	if a.Progress > 0 {
		argv = append(argv, "-progress", strconv.FormatInt(a.Progress.Milliseconds(), 10)+"ms")
	}
	if a.AckFirst {
		argv = append(argv, "-ack-first")
	}
	if a.ClaimTTL > 0 {
		argv = append(argv, "-claim-ttl", strconv.FormatInt(a.ClaimTTL.Milliseconds(), 10)+"ms")
	}
	return argv
}

// ParseConsumeArgs reads the command line Argv renders.
func ParseConsumeArgs(argv []string) (ConsumeArgs, error) {
	var a ConsumeArgs
	fs := flag.NewFlagSet(ConsumerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	check := a.Deliver.Bind(fs)
	sub := a.Sub.Bind(fs)
	fs.DurationVar(&a.Hold, "hold", 0, "work on this long after the commits, before the ack")
	fs.DurationVar(&a.Progress, "progress", 0, "during -hold, tell the broker this often that the work goes on")
	fs.BoolVar(&a.AckFirst, "ack-first", false, "ack before the work (at most once)")
	fs.DurationVar(&a.ClaimTTL, "claim-ttl", 0, "with -pattern ttl-claim: the TTL of the claim taken before the work")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := errors.Join(check(), sub()); err != nil {
		return a, err
	}
	if (a.Deliver.Pattern == TTLClaim) != (a.ClaimTTL > 0) {
		return a, fmt.Errorf("-claim-ttl %s with -pattern %s: the %s pattern, and only it, takes a positive TTL", a.ClaimTTL, a.Deliver.Pattern, TTLClaim)
	}
	return a, nil
}

// Consumed is the broker's word on one consumer process: whether a
// message came, what its ack subject said of it, and what the server
// answered to the ack.
type Consumed struct {
	Fetched bool `json:"fetched"`
	// MsgID is the message's Nats-Msg-Id header.
	MsgID string         `json:"msg_id,omitempty"`
	Meta  *natswire.Meta `json:"meta,omitempty"`
	// Redelivered is the broker's flag: a delivery count above 1.
	Redelivered bool                `json:"redelivered"`
	Ack         *natswire.AckAnswer `json:"ack,omitempty"`
	// FetchedMS and AckedMS are when the message came and when the ack's
	// answer did, in ms from the consumer's start: timings, not judged.
	FetchedMS float64 `json:"fetched_ms,omitempty"`
	AckedMS   float64 `json:"acked_ms,omitempty"`
	// InProgress counts the in-progress notices the server answered.
	InProgress int `json:"in_progress,omitempty"`
	// Claim is the ttl-claim pattern's claim, and Nak what the server
	// answered to the nak a consumer that lost it sent.
	Claim *ClaimTry           `json:"claim,omitempty"`
	Nak   *natswire.AckAnswer `json:"nak,omitempty"`
}

// Acked says whether the server accepted the ack: it answered, with no
// status and nothing in the answer.
func (c Consumed) Acked() bool {
	return c.Ack != nil && c.Ack.Answered && c.Ack.Status == 0 && c.Ack.Data == ""
}

// ConsumeMain is the registered worker "redelivery.consume". No message
// within the fetch wait is an ACK with nothing done; a crash point ends
// the process before its ack, as a consumer's crash does.
func ConsumeMain(call *protocol.Call) int {
	t0 := time.Now()
	since := func() float64 { return float64(time.Since(t0).Microseconds()) / 1000 }
	a, err := ParseConsumeArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	res := Result{Pattern: a.Deliver.Pattern, Broker: &Consumed{}}
	got := res.Broker
	c, m, err := FetchEvent(a.Sub, got, since, a.Deliver.Event)
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return call.Fail(err)
	}
	if m == nil {
		return call.Finish(res, protocol.ExitACK)
	}
	ack := func() error {
		ans, err := c.AckSync(m, AckTimeout)
		if err != nil {
			return fmt.Errorf("ack: %w", err)
		}
		got.Ack, got.AckedMS = &ans, since()
		return nil
	}
	if a.AckFirst {
		if err := ack(); err != nil {
			return call.Fail(err)
		}
	}
	if a.ClaimTTL > 0 {
		won, err := claimThenWork(a, &res)
		if err != nil {
			return call.Fail(err)
		}
		if !won {
			ans, err := c.Nak(m, a.ClaimTTL, AckTimeout)
			if err != nil {
				return call.Fail(fmt.Errorf("nak: %w", err))
			}
			got.Nak = &ans
			return call.Finish(res, protocol.ExitACK)
		}
	} else if err := deliverOnce(call, a.Deliver, &res); err != nil {
		return call.Fail(err)
	}
	if got.InProgress, err = hold(c, m, a.Hold, a.Progress); err != nil {
		return call.Fail(err)
	}
	if !a.AckFirst {
		if err := ack(); err != nil {
			return call.Fail(err)
		}
	}
	return call.Finish(res, protocol.ExitACK)
}

// deliverOnce opens the database, delivers the event once with the
// call's crash points and fills res with the outcome and the settings
// read back.
func deliverOnce(call *protocol.Call, a Args, res *Result) error {
	return withStore(a, res, func(ctx context.Context, st store.Store) (Outcome, error) {
		return DeliverOn(ctx, st, a.Pattern, a.Event, call.Points)
	})
}

// withStore opens a's database with the schema made, runs work on it,
// and fills res with its outcome and the settings read back.
func withStore(a Args, res *Result, work func(context.Context, store.Store) (Outcome, error)) error {
	ctx := context.Background()
	st, rb, usage, err := open(ctx, a.Backend, a.DB)
	if err = errors.Join(usage, err); err != nil {
		return err
	}
	if err := EnsureSchema(ctx, st.DB); err != nil {
		st.Close()
		return err
	}
	out, err := work(ctx, st)
	if err != nil {
		st.Close()
		return err
	}
	res.Outcome, res.Postgres = out, rb.Postgres
	if rb.SQLite != nil {
		res.Settings = *rb.SQLite
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// hold works on for d; with a positive every, it sends an in-progress
// notice every that often while more than every is left, and counts the
// ones the server answered.
func hold(c *natswire.Conn, m *natswire.Msg, d, every time.Duration) (int, error) {
	if every <= 0 {
		time.Sleep(d)
		return 0, nil
	}
	n := 0
	for left := d; left > 0; left -= every {
		time.Sleep(min(every, left))
		if left <= every {
			break
		}
		ans, err := c.InProgress(m, AckTimeout)
		if err != nil {
			return n, fmt.Errorf("in progress: %w", err)
		}
		if ans.Answered && ans.Status == 0 {
			n++
		}
	}
	return n, nil
}

// Notices is how many in-progress notices a hold of d sends every every.
func Notices(d, every time.Duration) int {
	if every <= 0 || d <= 0 {
		return 0
	}
	return int((d - 1) / every)
}

// FetchEvent is Fetch for a consumer of the event want: the message must
// hold it, as JSON, or the fetch fails, naming what it held.
func FetchEvent[E comparable](sub natswire.Sub, got *Consumed, since func() float64, want E) (*natswire.Conn, *natswire.Msg, error) {
	c, m, err := Fetch(sub, got, since)
	if err != nil || m == nil {
		return c, m, err
	}
	var ev E
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev != want {
		return c, nil, fmt.Errorf("the message holds %q (%v), the arguments name event %+v", m.Data, err, want)
	}
	return c, m, nil
}

// Fetch is a consumer process's fetch: it dials sub's server and fetches
// one message from its durable pull consumer, recording in got what the
// broker said of it (its id, when it came, its delivery metadata and
// whether it is a redelivery). The message is nil when none came within
// the fetch wait. The caller closes the connection, which is nil only
// with an error.
func Fetch(sub natswire.Sub, got *Consumed, since func() float64) (*natswire.Conn, *natswire.Msg, error) {
	c, err := natswire.Dial(sub.URL, natswire.APITimeout)
	if err != nil {
		return nil, nil, err
	}
	m, err := c.Next(sub.Stream, sub.Consumer, sub.FetchWait)
	if err != nil || m == nil {
		return c, nil, err
	}
	got.Fetched, got.MsgID, got.FetchedMS = true, m.Header[natswire.HeaderMsgID], since()
	meta, err := natswire.ParseMeta(m.Reply)
	if err != nil {
		return c, nil, err
	}
	got.Meta, got.Redelivered = &meta, meta.NumDelivered > 1
	return c, m, nil
}
