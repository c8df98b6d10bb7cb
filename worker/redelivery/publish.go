package redelivery

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
)

// PublisherName is the registry name of the publisher: it publishes the
// event with its id as Nats-Msg-Id unless its outbox row says it did, and
// records the publish in that row once the broker has acked it.
const PublisherName = "redelivery.publish"

// PointAfterPublishAck is the publisher's crash point: the broker has
// acked the publish, the publisher has not recorded it.
const PointAfterPublishAck = "after-publish-ack"

// PublishedSchema is the publisher's outbox record, in the events file.
const PublishedSchema = `CREATE TABLE IF NOT EXISTS published_events (event_id TEXT PRIMARY KEY NOT NULL);`

// PublishArgs are the publisher's arguments.
type PublishArgs struct {
	DB      string
	Backend string
	Event   Event
	URL     string
	Subject string
}

// Argv is the command line after the worker name.
func (a PublishArgs) Argv() []string {
	argv := store.BackendArgv([]string{"-db", a.DB, "-event-id", a.Event.ID, "-job-key", a.Event.JobKey}, a.Backend)
	return append(argv, "-nats-url", a.URL, "-subject", a.Subject)
}

// ParsePublishArgs reads the command line Argv renders.
func ParsePublishArgs(argv []string) (PublishArgs, error) {
	var a PublishArgs
	fs := flag.NewFlagSet(PublisherName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.DB, "db", "", "database file")
	fs.StringVar(&a.Event.ID, "event-id", "", "event id")
	fs.StringVar(&a.Event.JobKey, "job-key", "", "job key")
	backend := store.BindBackend(fs, &a.Backend)
	fs.StringVar(&a.URL, "nats-url", "", "NATS server URL")
	fs.StringVar(&a.Subject, "subject", "", "subject to publish on")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := backend(); err != nil {
		return a, err
	}
	if a.DB == "" || a.Event.ID == "" || a.Event.JobKey == "" || a.URL == "" || a.Subject == "" {
		return a, errors.New("-db, -event-id, -job-key, -nats-url and -subject are required")
	}
	return a, nil
}

// PublishResult is the publisher's report payload: skipped when its
// outbox row said the event was published, else the broker's publish ack.
type PublishResult struct {
	Skipped bool             `json:"skipped"`
	Ack     *natswire.PubAck `json:"ack,omitempty"`
}

// PublishMain is the registered worker "redelivery.publish".
func PublishMain(call *protocol.Call) int {
	a, err := ParsePublishArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	st, _, usage, err := open(ctx, a.Backend, a.DB)
	if usage != nil {
		return call.Usage(usage)
	}
	if err != nil {
		return call.Fail(err)
	}
	defer st.Close()
	if _, err := st.DB.ExecContext(ctx, PublishedSchema); err != nil {
		return call.Fail(fmt.Errorf("create the outbox: %w", err))
	}
	var n int
	if err := st.DB.QueryRowContext(ctx, st.Dialect.Rebind("SELECT count(*) FROM published_events WHERE event_id = ?"), a.Event.ID).Scan(&n); err != nil {
		return call.Fail(fmt.Errorf("read the outbox: %w", err))
	}
	if n > 0 {
		return call.Finish(PublishResult{Skipped: true}, protocol.ExitACK)
	}
	c, err := natswire.Dial(a.URL, natswire.APITimeout)
	if err != nil {
		return call.Fail(err)
	}
	defer c.Close()
	data, err := json.Marshal(a.Event)
	if err != nil {
		return call.Fail(err)
	}
	ack, err := c.PublishMsg(a.Subject, a.Event.ID, data)
	if err != nil {
		return call.Fail(err)
	}
	call.Points.Hit(PointAfterPublishAck)
	if _, err := st.DB.ExecContext(ctx, st.Dialect.Rebind("INSERT INTO published_events (event_id) VALUES (?)"), a.Event.ID); err != nil {
		return call.Fail(fmt.Errorf("record the publish: %w", err))
	}
	return call.Finish(PublishResult{Ack: &ack}, protocol.ExitACK)
}
