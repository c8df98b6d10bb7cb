package wire

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSenderToken builds a process's URL as the parent does, reads the
// token back from the URL (SenderOf) and as the receiver does from a send
// to it (SenderOfRequest, routed by Handle): a token round-trips, a URL
// without one gives SenderUnknown, and a prefix that is not a token is no
// token.
func TestSenderToken(t *testing.T) {
	const base = "http://127.0.0.1:9"
	// notRouted is what the receiver reads of a send its routes do not
	// serve.
	const notRouted = "(not routed)"
	tests := []struct {
		name string
		url  string
		// base and tok are SenderOf's answer.
		base, tok string
		// logged is the sender the receiver reads from url+PathSend.
		logged string
	}{
		{"the first process", SenderURL(base, Token(1)), base, "p1", "p1"},
		{"the twelfth process", SenderURL(base, Token(12)), base, "p12", "p12"},
		{"no token", base, base, "", SenderUnknown},
		{"an empty token", base + "/s/", base + "/s/", "", notRouted},
		{"not p and a number", base + "/s/x", base + "/s/x", "", SenderUnknown},
		{"p alone", base + "/s/p", base + "/s/p", "", SenderUnknown},
		{"p0", base + "/s/p0", base + "/s/p0", "", SenderUnknown},
		{"a leading zero", base + "/s/p03", base + "/s/p03", "", SenderUnknown},
		{"a negative number", base + "/s/p-1", base + "/s/p-1", "", SenderUnknown},
		{"a path after the token", base + "/s/p2/more", base + "/s/p2/more", "", notRouted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, tok := SenderOf(tt.url)
			if diff := cmp.Diff([2]string{tt.base, tt.tok}, [2]string{b, tok}); diff != "" {
				t.Errorf("SenderOf(%q) (-want +got):\n%s", tt.url, diff)
			}
			got := notRouted
			mux := http.NewServeMux()
			Handle(mux, http.MethodPost, PathSend, func(_ http.ResponseWriter, req *http.Request) { got = SenderOfRequest(req) })
			mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, tt.url+PathSend, nil))
			if got != tt.logged {
				t.Errorf("the receiver reads sender %q from a send to %s, want %q", got, tt.url+PathSend, tt.logged)
			}
		})
	}
}

// TestPublicSend builds a public send as the pattern worker does and reads
// it as the receiver does: the key travels in the Idempotency-Key header,
// which both sides name alike, the body is the README's, and a body of
// the batch protocol is not a public send.
func TestPublicSend(t *testing.T) {
	type read struct {
		PS  PublicSend
		Key string
		OK  bool
	}
	tests := []struct {
		name   string
		ps     PublicSend
		key    string
		body   string
		header http.Header
		want   read
	}{
		{"with a key", PublicSend{EventID: "e-1", Step: "notify"}, "outbox-7", `{"event_id":"e-1","step":"notify"}`,
			http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"outbox-7"}},
			read{PublicSend{EventID: "e-1", Step: "notify"}, "outbox-7", true}},
		{"without a key", PublicSend{EventID: "e-2", Step: "charge"}, "", `{"event_id":"e-2","step":"charge"}`,
			http.Header{"Content-Type": {"application/json"}},
			read{PublicSend{EventID: "e-2", Step: "charge"}, "", true}},
		{"no event", PublicSend{Step: "notify"}, "k", `{"event_id":"","step":"notify"}`,
			http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"k"}},
			read{PublicSend{Step: "notify"}, "", false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := NewPublicRequest(context.Background(), "http://127.0.0.1:9/s/p1", tt.ps, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			sent := struct {
				Method, URL, Body string
				Header            http.Header
			}{req.Method, req.URL.String(), string(body), req.Header}
			want := struct {
				Method, URL, Body string
				Header            http.Header
			}{http.MethodPost, "http://127.0.0.1:9/s/p1/send", tt.body, tt.header}
			if diff := cmp.Diff(want, sent); diff != "" {
				t.Errorf("the request sent (-want +got):\n%s", diff)
			}
			var got read
			got.PS, got.Key, got.OK = ReadPublic(req, body)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadPublic (-want +got):\n%s", diff)
			}
		})
	}
	batch := httptest.NewRequest(http.MethodPost, PathSend, nil)
	if ps, _, ok := ReadPublic(batch, []byte(`{"job_id":"j","item_id":"i","step":"notify","digest":"d"}`)); ok {
		t.Errorf("a batch send was read as the public send %+v", ps)
	}
}

// TestLookupQuery asks for a receipt as the client does and reads the
// question as the receiver does.
func TestLookupQuery(t *testing.T) {
	k := Key{Job: "job-1", Item: "item-041", Step: "notify"}
	type read struct {
		K   Key
		Gen int64
		OK  bool
	}
	tests := []struct {
		name  string
		query string
		want  read
	}{
		{"no generation", lookupQuery(k, 0), read{k, 0, true}},
		{"a lease holder's", lookupQuery(k, 4), read{k, 4, true}},
		{"no step", lookupQuery(Key{Job: "job-1", Item: "item-041"}, 0), read{Key{Job: "job-1", Item: "item-041"}, 0, false}},
		{"an unreadable generation", "job_id=job-1&item_id=item-041&step=notify&generation=x", read{k, 0, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var got read
			got.K, got.Gen, got.OK = ParseLookup(q)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseLookup(%q) (-want +got):\n%s", tt.query, diff)
			}
		})
	}
	// The names on the wire, which the receiver's log and older folders
	// know: a change here changes what the harness sends.
	if got, want := lookupQuery(k, 4), "generation=4&item_id=item-041&job_id=job-1&step=notify"; got != want {
		t.Errorf("lookupQuery = %q, want %q", got, want)
	}
}
