package receiver

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wb "idemlab/worker/batch"
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
	own := wb.NewClient(SenderURL(r.URL, Token(3)))
	defer own.CloseIdle()
	bare := wb.NewClient(r.URL)
	defer bare.CloseIdle()
	if err := own.Ping(ctx); err != nil {
		t.Fatalf("ping under the prefix: %v", err)
	}
	for _, c := range []*wb.Client{own, bare} {
		if _, err := c.Send(ctx, wb.SendRequest{JobID: "j", ItemID: "item-001", Step: wb.StepNotify, Digest: "d1234567"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, found, err := own.Lookup(ctx, wb.Key{Job: "j", Item: "item-001", Step: wb.StepNotify}); err != nil || !found {
		t.Fatalf("lookup under the prefix: found %v, %v", found, err)
	}
	start := time.Now()
	resp, err := http.Post(SenderURL(r.URL, Token(4))+wb.PathSend, "application/json", bytes.NewReader([]byte(`{"event_id": "e-1", "step": "notify"}`)))
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
	if diff := cmp.Diff([]string{"p3", SenderUnknown, "p4"}, got); diff != "" {
		t.Errorf("senders logged (-want +got):\n%s", diff)
	}
}

// TestSenderOf reads the token back from a URL, and none from a bare one.
func TestSenderOf(t *testing.T) {
	tests := []struct{ url, base, tok string }{
		{SenderURL("http://127.0.0.1:9", "p2"), "http://127.0.0.1:9", "p2"},
		{"http://127.0.0.1:9", "http://127.0.0.1:9", ""},
		{"http://127.0.0.1:9/s/", "http://127.0.0.1:9/s/", ""},
	}
	for _, tt := range tests {
		if b, tok := SenderOf(tt.url); b != tt.base || tok != tt.tok {
			t.Errorf("SenderOf(%q) = %q, %q; want %q, %q", tt.url, b, tok, tt.base, tt.tok)
		}
	}
}
