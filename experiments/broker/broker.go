// Package broker is the message broker a scenario may deliver through:
// none (the harness hands the event to a fresh process itself, as the
// articles' runs do) or nats (a JetStream server per trial, in a process
// of its own). RabbitMQ would be a third implementation of Broker.
package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The brokers' names on the command line.
const (
	None = "none"
	NATS = "nats"
)

// Caps are what a broker does by itself, so a scenario can refuse an
// experiment its broker cannot run.
type Caps struct {
	// Redelivers: the broker, not the harness, redelivers an unacked
	// message, on its own clock (AckWait).
	Redelivers bool
	// DeliveryCount: each delivery carries the broker's count of it and so
	// its redelivered flag.
	DeliveryCount bool
	// Dedup: the broker drops a republish with the same message id inside
	// a window.
	Dedup bool
	// Kill: the harness owns the broker's process and can SIGKILL it.
	Kill bool
}

// Settings are every broker setting a trial runs with; they are recorded
// in the scenario's settings, and the oracle reads them.
type Settings struct {
	Name     string `json:"name"`
	Stream   string `json:"stream"`
	Subject  string `json:"subject"`
	Consumer string `json:"consumer"`
	// AckWaitMS is how long the broker waits for an ack before it
	// redelivers; MaxDeliver how often it delivers at most.
	AckWaitMS  int64 `json:"ack_wait_ms"`
	MaxDeliver int   `json:"max_deliver"`
	// DuplicateWindowMS is the Nats-Msg-Id dedup window.
	DuplicateWindowMS int64 `json:"duplicate_window_ms"`
	// SyncInterval is the file store's sync_interval: empty for the
	// server's default, "always", or a duration.
	SyncInterval string `json:"sync_interval,omitempty"`
	// FetchWaitMS is how long a consumer process waits for a message.
	FetchWaitMS int64 `json:"fetch_wait_ms"`
	// URL, when set, is a NATS server of the user's (--broker-url): no
	// server is started, killed or restarted; each trial makes its own
	// stream there and deletes it at its end.
	URL string `json:"url,omitempty"`
	// Binary and BinarySHA256 are the idemlab-nats the run's preflight
	// found or built (EnsureNATSServer), not recorded here: each trial's
	// Server records them. Empty, a trial finds the binary itself.
	Binary       string `json:"-"`
	BinarySHA256 string `json:"-"`
}

// AckWait is the setting as a duration.
func (s Settings) AckWait() time.Duration { return time.Duration(s.AckWaitMS) * time.Millisecond }

// FetchWait is the setting as a duration.
func (s Settings) FetchWait() time.Duration { return time.Duration(s.FetchWaitMS) * time.Millisecond }

// DuplicateWindow is the setting as a duration.
func (s Settings) DuplicateWindow() time.Duration {
	return time.Duration(s.DuplicateWindowMS) * time.Millisecond
}

// Published is the broker's answer to one publish.
type Published struct {
	MsgID     string `json:"msg_id"`
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

// State is the broker's word on a trial's stream and consumer.
type State struct {
	Messages       uint64 `json:"messages"`
	LastSeq        uint64 `json:"last_seq"`
	Delivered      uint64 `json:"delivered_consumer_seq"`
	AckFloor       uint64 `json:"ack_floor_stream_seq"`
	NumAckPending  int    `json:"num_ack_pending"`
	NumRedelivered int    `json:"num_redelivered"`
	NumPending     uint64 `json:"num_pending"`
}

// Server is what a trial's broker process said of itself when it was
// ready.
type Server struct {
	// PID is the broker process's; it is gone once the trial is closed.
	PID          int     `json:"pid"`
	Version      string  `json:"version"`
	SyncInterval string  `json:"sync_interval"`
	ReadyMS      float64 `json:"ready_ms"`
	// Binary is the idemlab-nats that ran, and BinarySHA256 its hash when
	// the run's preflight took it; absent in folders made before.
	Binary       string `json:"binary,omitempty"`
	BinarySHA256 string `json:"binary_sha256,omitempty"`
}

// Broker starts trials.
type Broker interface {
	Name() string
	Caps() Caps
	// Start starts one trial's broker with its own store under dir, and
	// creates its stream and durable consumer from s.
	Start(ctx context.Context, s Settings, dir string) (Trial, error)
}

// Trial is one trial's running broker.
type Trial interface {
	// URL is where consumer processes connect.
	URL() string
	// StoreDir is the trial's store folder.
	StoreDir() string
	Server() Server
	// Publish publishes data with message id msgID and returns the
	// broker's publish ack.
	Publish(msgID string, data []byte) (Published, error)
	// State reads the stream's and the consumer's state.
	State() (State, error)
	// ConsumerArgv is the command line a consumer process needs to fetch
	// and ack from the trial's consumer.
	ConsumerArgv() []string
	// Kill SIGKILLs the broker's process group and reaps it.
	Kill() error
	// Restart SIGKILLs the broker and starts it again on the same store;
	// Server then describes the new process.
	Restart(ctx context.Context) error
	// Declare creates the trial's stream and durable consumer where they
	// are missing, as a service declares them when it starts; what
	// exists is left as it is.
	Declare() error
	// Close stops the broker, reaps it and removes its store folder.
	Close() error
}

// registry holds every broker but none, which has no trial.
var registry = map[string]Broker{NATS: natsBroker{}}

// Names lists the brokers --broker takes, none first.
func Names() []string {
	names := []string{None}
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names[1:])
	return names
}

// Lookup finds a broker by name; none and "" are nil with no error.
func Lookup(name string) (Broker, error) {
	if name == "" || name == None {
		return nil, nil
	}
	if b, ok := registry[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("unknown broker %q (known: %s)", name, strings.Join(Names(), ", "))
}
