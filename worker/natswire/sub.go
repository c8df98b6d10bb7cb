package natswire

import (
	"errors"
	"flag"
	"strconv"
	"time"
)

// Sub is where a consumer process fetches from: the server, the stream
// and its durable pull consumer, and how long to wait for a message. The
// parent renders it with Argv, the consumer reads it back with Bind, and a
// fold renders it again to check a recorded command line.
type Sub struct {
	URL       string
	Stream    string
	Consumer  string
	FetchWait time.Duration
}

// Argv renders the flags.
func (s Sub) Argv() []string {
	return []string{"-nats-url", s.URL, "-stream", s.Stream, "-consumer", s.Consumer,
		"-fetch-wait", strconv.FormatInt(s.FetchWait.Milliseconds(), 10) + "ms"}
}

// Bind declares the flags on fs and returns the check to run after
// fs.Parse.
func (s *Sub) Bind(fs *flag.FlagSet) (check func() error) {
	fs.StringVar(&s.URL, "nats-url", "", "NATS server URL")
	fs.StringVar(&s.Stream, "stream", "", "JetStream stream")
	fs.StringVar(&s.Consumer, "consumer", "", "durable pull consumer")
	fs.DurationVar(&s.FetchWait, "fetch-wait", 0, "how long to wait for a message")
	return func() error {
		if s.URL == "" || s.Stream == "" || s.Consumer == "" || s.FetchWait <= 0 {
			return errors.New("-nats-url, -stream, -consumer and a positive -fetch-wait are required")
		}
		return nil
	}
}

// Ready is the one line a broker process (idemlab-nats worker nats.serve)
// prints on its standard output once it accepts connections: the
// parent's handshake. It lives here so that both sides share it without
// idemlab linking the server.
type Ready struct {
	URL     string `json:"url"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	Store   string `json:"store_dir"`
	// SyncInterval is what the server was configured with: "always", a
	// duration, or "default" with the server's default duration.
	SyncInterval string `json:"sync_interval"`
	// ReadyMS is from the start of the broker's main to ready.
	ReadyMS float64 `json:"ready_ms"`
}

// SyncAlways is the sync_interval setting of a file store that syncs
// every write, and DefaultSyncInterval the interval when none is set
// (nats-server documents two minutes).
const (
	SyncAlways          = "always"
	DefaultSyncInterval = 2 * time.Minute
)

// SyncLabel is how a broker's ready line states the sync_interval
// setting s: "always", the duration as Go prints it, or "default 2m0s"
// when s is empty. The broker prints it, and the fold derives it from the
// recorded settings to check the line.
func SyncLabel(s string) string {
	switch s {
	case "":
		return "default " + DefaultSyncInterval.String()
	case SyncAlways:
		return SyncAlways
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d.String()
	}
	return s
}
