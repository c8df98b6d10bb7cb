package receiver

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/wire"
)

// TestSenderToken sends over real loopback HTTP to a process's URL and to
// the bare one: the receiver logs the token from the path prefix, or
// sender unknown, for the batch worker's sends and the public ones; the
// lookups and the ping answer under the prefix too; and a public send is
// held SendLatency before it is logged.
func TestSenderToken(t *testing.T) {
	const latency = 30 * time.Millisecond
	r, err := Start(Config{SendLatency: latency})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	own := wire.NewClient(wire.SenderURL(r.URL, wire.Token(3)))
	defer own.CloseIdle()
	bare := wire.NewClient(r.URL)
	defer bare.CloseIdle()
	if err := own.Ping(ctx); err != nil {
		t.Fatalf("ping under the prefix: %v", err)
	}
	for _, c := range []*wire.Client{own, bare} {
		if _, err := c.Send(ctx, wire.SendRequest{JobID: "j", ItemID: "item-001", Step: "notify", Digest: "d1234567"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, found, err := own.Lookup(ctx, wire.Key{Job: "j", Item: "item-001", Step: "notify"}); err != nil || !found {
		t.Fatalf("lookup under the prefix: found %v, %v", found, err)
	}
	start := time.Now()
	resp, err := http.Post(wire.SenderURL(r.URL, wire.Token(4))+wire.PathSend, "application/json", bytes.NewReader([]byte(`{"event_id": "e-1", "step": "notify"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != http.StatusOK || d < latency {
		t.Errorf("public send: %d after %v, want 200 after at least %v", resp.StatusCode, d, latency)
	}
	log, _ := r.LogSince(0)
	var got []string
	for _, e := range log {
		got = append(got, e.Sender)
	}
	if diff := cmp.Diff([]string{"p3", wire.SenderUnknown, "p4"}, got); diff != "" {
		t.Errorf("senders logged (-want +got):\n%s", diff)
	}
}
