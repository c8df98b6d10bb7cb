package natswire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// APITimeout bounds one JetStream API request.
const APITimeout = 5 * time.Second

// HeaderMsgID is JetStream's publish dedup header.
const HeaderMsgID = "Nats-Msg-Id"

// APIError is a JetStream API's error answer.
type APIError struct {
	Code        int    `json:"code"`
	ErrCode     int    `json:"err_code"`
	Description string `json:"description"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("jetstream: %s (code %d, err_code %d)", e.Description, e.Code, e.ErrCode)
}

// api sends a JetStream API request and decodes its answer into out.
func (c *Conn) api(subject string, req, out any) error {
	var data []byte
	if req != nil {
		var err error
		if data, err = json.Marshal(req); err != nil {
			return err
		}
	}
	return c.call(subject, nil, data, out)
}

// call sends a request to JetStream (an API subject, or a stream's subject
// for a publish) and decodes its answer into out, or its error answer into
// an APIError.
func (c *Conn) call(subject string, header map[string]string, data []byte, out any) error {
	m, err := c.Request(subject, header, data, APITimeout)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if m.Status == 503 {
		return fmt.Errorf("%s: no responders: is JetStream enabled, and does a stream take the subject?", subject)
	}
	var e struct {
		Error *APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return fmt.Errorf("%s: answer %q: %w", subject, m.Data, err)
	}
	if e.Error != nil {
		return e.Error
	}
	if out != nil {
		if err := json.Unmarshal(m.Data, out); err != nil {
			return fmt.Errorf("%s: %w", subject, err)
		}
	}
	return nil
}

// StreamConfig is the part of a stream's configuration idemlab sets.
type StreamConfig struct {
	Name     string   `json:"name"`
	Subjects []string `json:"subjects"`
	Storage  string   `json:"storage"`
	Replicas int      `json:"num_replicas"`
	// Duplicates is the Nats-Msg-Id dedup window, in nanoseconds.
	Duplicates time.Duration `json:"duplicate_window"`
}

// ConsumerConfig is the part of a durable pull consumer's configuration
// idemlab sets.
type ConsumerConfig struct {
	Durable       string        `json:"durable_name"`
	AckPolicy     string        `json:"ack_policy"`
	DeliverPolicy string        `json:"deliver_policy"`
	AckWait       time.Duration `json:"ack_wait"`
	MaxDeliver    int           `json:"max_deliver"`
}

// SequenceInfo is a consumer's position: the consumer's and the stream's
// sequence.
type SequenceInfo struct {
	Consumer uint64 `json:"consumer_seq"`
	Stream   uint64 `json:"stream_seq"`
}

// StreamState is a stream's state as STREAM.INFO answers it.
type StreamState struct {
	Msgs     uint64 `json:"messages"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
}

// ConsumerState is a consumer's state as CONSUMER.INFO answers it.
type ConsumerState struct {
	Delivered      SequenceInfo `json:"delivered"`
	AckFloor       SequenceInfo `json:"ack_floor"`
	NumAckPending  int          `json:"num_ack_pending"`
	NumRedelivered int          `json:"num_redelivered"`
	NumPending     uint64       `json:"num_pending"`
}

// CreateStream creates (or finds identical) a stream.
func (c *Conn) CreateStream(cfg StreamConfig) error {
	return c.api("$JS.API.STREAM.CREATE."+cfg.Name, cfg, nil)
}

// CreateConsumer creates a durable consumer on stream.
func (c *Conn) CreateConsumer(stream string, cfg ConsumerConfig) error {
	req := struct {
		Stream string         `json:"stream_name"`
		Config ConsumerConfig `json:"config"`
	}{stream, cfg}
	return c.api("$JS.API.CONSUMER.DURABLE.CREATE."+stream+"."+cfg.Durable, req, nil)
}

// DeleteStream deletes a stream; one that does not exist is no error.
func (c *Conn) DeleteStream(stream string) error {
	err := c.api("$JS.API.STREAM.DELETE."+stream, nil, nil)
	var e *APIError
	if errors.As(err, &e) && e.Code == 404 {
		return nil
	}
	return err
}

// StreamInfo reads a stream's state.
func (c *Conn) StreamInfo(stream string) (StreamState, error) {
	var out struct {
		State StreamState `json:"state"`
	}
	err := c.api("$JS.API.STREAM.INFO."+stream, nil, &out)
	return out.State, err
}

// ConsumerInfo reads a consumer's state.
func (c *Conn) ConsumerInfo(stream, consumer string) (ConsumerState, error) {
	var out ConsumerState
	err := c.api("$JS.API.CONSUMER.INFO."+stream+"."+consumer, nil, &out)
	return out, err
}

// PubAck is the stream's answer to a publish.
type PubAck struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// PublishMsg publishes data on subject with Nats-Msg-Id msgID and waits
// for the stream's publish ack.
func (c *Conn) PublishMsg(subject, msgID string, data []byte) (PubAck, error) {
	var ack PubAck
	err := c.call(subject, map[string]string{HeaderMsgID: msgID}, data, &ack)
	return ack, err
}

// Meta is what a JetStream message's reply subject says about it.
type Meta struct {
	Stream       string `json:"stream"`
	Consumer     string `json:"consumer"`
	NumDelivered uint64 `json:"num_delivered"`
	StreamSeq    uint64 `json:"stream_seq"`
	ConsumerSeq  uint64 `json:"consumer_seq"`
	NumPending   uint64 `json:"num_pending"`
}

// ParseMeta reads an ack subject, in the old form
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
// or the newer one with a domain and an account hash after ACK (and
// possibly more tokens after the pending count).
func ParseMeta(reply string) (Meta, error) {
	t := strings.Split(reply, ".")
	if len(t) < 9 || t[0] != "$JS" || t[1] != "ACK" {
		return Meta{}, fmt.Errorf("%q is not a JetStream ack subject", reply)
	}
	if len(t) > 9 {
		if len(t) < 11 {
			return Meta{}, fmt.Errorf("%q is not a JetStream ack subject", reply)
		}
		t = append(t[:2:2], t[4:]...)
	}
	var n [5]uint64
	for i := range n {
		v, err := strconv.ParseUint(t[4+i], 10, 64)
		if err != nil {
			return Meta{}, fmt.Errorf("%q: token %d: %w", reply, 4+i, err)
		}
		n[i] = v
	}
	return Meta{Stream: t[2], Consumer: t[3], NumDelivered: n[0], StreamSeq: n[1], ConsumerSeq: n[2], NumPending: n[4]}, nil
}

// Next asks a pull consumer for one message and waits up to expires for
// it. It returns nil and no error when the server said there was none
// (404 or 408).
func (c *Conn) Next(stream, consumer string, expires time.Duration) (*Msg, error) {
	req := fmt.Sprintf(`{"batch":1,"expires":%d}`, expires.Nanoseconds())
	m, err := c.RequestOwn("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+consumer, []byte(req), expires+APITimeout)
	if err != nil {
		return nil, err
	}
	switch m.Status {
	case 0:
		return m, nil
	case 404, 408:
		return nil, nil
	}
	return nil, fmt.Errorf("next message: status %d %s", m.Status, m.Description)
}

// AckAnswer is what the server said to a synchronous ack.
type AckAnswer struct {
	// Answered is true when the server replied before the timeout.
	Answered bool `json:"answered"`
	// Status and Data are the reply's; an accepted ack's reply is empty.
	Status int    `json:"status,omitempty"`
	Data   string `json:"data,omitempty"`
}

// AckSync acks m and waits up to timeout for the server's answer (the
// double ack). A reply that never comes is no error: it is recorded as
// not answered.
func (c *Conn) AckSync(m *Msg, timeout time.Duration) (AckAnswer, error) {
	return c.ackKind(m, "+ACK", timeout)
}

// InProgress tells the server the work on m goes on, which restarts its
// AckWait, and waits for the answer.
func (c *Conn) InProgress(m *Msg, timeout time.Duration) (AckAnswer, error) {
	return c.ackKind(m, "+WPI", timeout)
}

// Nak tells the server the work on m is not done here and asks it to
// redeliver m after delay, and waits for the answer.
func (c *Conn) Nak(m *Msg, delay, timeout time.Duration) (AckAnswer, error) {
	return c.ackKind(m, fmt.Sprintf(`-NAK {"delay":%d}`, delay.Nanoseconds()), timeout)
}

func (c *Conn) ackKind(m *Msg, kind string, timeout time.Duration) (AckAnswer, error) {
	if m.Reply == "" {
		return AckAnswer{}, errors.New("the message has no ack subject")
	}
	r, err := c.Request(m.Reply, nil, []byte(kind), timeout)
	if errors.Is(err, ErrTimeout) {
		return AckAnswer{}, nil
	}
	if err != nil {
		return AckAnswer{}, err
	}
	return AckAnswer{Answered: true, Status: r.Status, Data: string(r.Data)}, nil
}
