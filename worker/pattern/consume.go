package pattern

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// ConsumerName is the registry name of the pattern's broker consumer: it
// fetches one message from a durable pull consumer, runs the pattern's
// handler for it as pattern.deliver does, and acks it synchronously, at
// the handler's ack step or else after the last step.
const ConsumerName = "pattern.consume"

// ConsumeArgs are a consumer's arguments: a delivery's, and where to
// fetch from.
type ConsumeArgs struct {
	Deliver Args
	Sub     natswire.Sub
}

// Argv is the command line after the worker name.
func (a ConsumeArgs) Argv() []string {
	return append(a.Deliver.Argv(), a.Sub.Argv()...)
}

// ParseConsumeArgs reads what Argv wrote.
func ParseConsumeArgs(argv []string) (ConsumeArgs, error) {
	var a ConsumeArgs
	fs := flag.NewFlagSet(ConsumerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	deliver := a.Deliver.bind(fs)
	sub := a.Sub.Bind(fs)
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if fs.NArg() > 0 {
		return a, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return a, errors.Join(deliver(), sub())
}

// ConsumeMain is the registered worker "pattern.consume". A message it
// fetches must hold the event its arguments name. Every ack the server
// accepts is also written on standard error as AckLine, so the parent
// reads where the ack came, crash or not, as under --broker none; the
// broker's state is the witness it is checked against. No message within
// the fetch wait exits 0 with nothing done and Fetched false.
func ConsumeMain(call *protocol.Call) int {
	t0 := time.Now()
	since := func() float64 { return float64(time.Since(t0).Microseconds()) / 1000 }
	a, err := ParseConsumeArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	res := &Result{Outcome: Outcome{Sends: []SendResult{}}, Broker: &wr.Consumed{}}
	got := res.Broker
	c, m, err := wr.FetchEvent(a.Sub, got, since, a.Deliver.EventID)
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return call.Fail(err)
	}
	if m == nil {
		return call.Finish(res, protocol.ExitACK)
	}
	acked := false
	ack := func() error {
		ans, err := c.AckSync(m, wr.AckTimeout)
		if err != nil {
			return fmt.Errorf("ack: %w", err)
		}
		got.Ack, got.AckedMS = &ans, since()
		if !got.Acked() {
			return fmt.Errorf("ack: the server answered %s", Compact(ans))
		}
		acked = true
		return stderrAck(call.Stderr)()
	}
	after := func() error {
		if acked {
			return nil
		}
		return ack()
	}
	return handle(call, a.Deliver, ack, after, res)
}

// Compact is v as one line of JSON, for a message.
func Compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// EventData is the message the harness publishes for event id: its id as
// a JSON string.
func EventData(id string) []byte {
	b, _ := json.Marshal(id)
	return b
}
