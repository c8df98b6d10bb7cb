package redelivery_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"idemlab/worker/natsserver"
	"idemlab/worker/natswire"
	wr "idemlab/worker/redelivery"
)

// startNATS runs a JetStream server in the test process, with a stream
// and a durable pull consumer, publishes data once and returns where to
// fetch it. The server stops with the test.
func startNATS(tb testing.TB, data []byte) natswire.Sub {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb strings.Builder
	done := make(chan int, 1)
	go func() { done <- natsserver.Main(natsserver.Args{Store: tb.TempDir()}.Argv(), inR, outW, &errb) }()
	tb.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("the server did not stop when its stdin closed")
		}
	})
	line, err := bufio.NewReader(outR).ReadBytes('\n')
	if err != nil {
		tb.Fatalf("no ready line: %v; stderr %s", err, errb.String())
	}
	var r natswire.Ready
	if err := json.Unmarshal(line, &r); err != nil {
		tb.Fatal(err)
	}
	c, err := natswire.Dial(r.URL, natswire.APITimeout)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	sub := natswire.Sub{URL: r.URL, Stream: "S", Consumer: "C", FetchWait: 2 * time.Second}
	if err := c.CreateStream(natswire.StreamConfig{Name: sub.Stream, Subjects: []string{"s.events"}, Storage: "file", Replicas: 1, Duplicates: time.Minute}); err != nil {
		tb.Fatal(err)
	}
	if err := c.CreateConsumer(sub.Stream, natswire.ConsumerConfig{Durable: sub.Consumer, AckPolicy: "explicit", DeliverPolicy: "all", AckWait: time.Minute, MaxDeliver: 3}); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.PublishMsg("s.events", "msg-1", data); err != nil {
		tb.Fatal(err)
	}
	return sub
}

// TestFetchEvent: a consumer gets the message when it holds the event its
// arguments name, and a failure naming both when it holds another.
func TestFetchEvent(t *testing.T) {
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"the named event", "evt-1", true},
		{"another event", "evt-2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := startNATS(t, []byte(`"evt-1"`))
			var got wr.Consumed
			c, m, err := wr.FetchEvent(sub, &got, func() float64 { return 0 }, tt.want)
			if c != nil {
				defer c.Close()
			}
			switch {
			case tt.ok && (err != nil || m == nil):
				t.Errorf("FetchEvent(%q): message %v, error %v; want the message", tt.want, m, err)
			case !tt.ok && (err == nil || m != nil || !strings.Contains(err.Error(), `"\"evt-1\""`) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("FetchEvent(%q): message %v, error %v; want a failure naming the held and the wanted event", tt.want, m, err)
			}
			if !got.Fetched || got.MsgID != "msg-1" {
				t.Errorf("recorded %+v, want the fetch of msg-1", got)
			}
		})
	}
}
