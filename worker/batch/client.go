package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The receiver's HTTP paths.
const (
	PathSend    = "/send"
	PathReceipt = "/receipt"
	PathPing    = "/ping"
)

// SendReply is the receiver's answer to an accepted send.
type SendReply struct {
	Receipt string `json:"receipt"`
	// Replayed is true when the receiver recognised the idempotency key
	// and returned the first receipt without accepting again.
	Replayed bool `json:"replayed,omitempty"`
}

// UnavailableError is a send the receiver refused with a status code,
// such as the injected 503 before accepting.
type UnavailableError struct{ Status int }

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("receiver answered %d %s", e.Status, http.StatusText(e.Status))
}

// ErrorType names the error in the journal.
func (e *UnavailableError) ErrorType() string { return "ReceiverUnavailable" }

// NoReplyError is a send whose reply never came: the connection broke
// after the request was written, so the receiver may or may not have
// accepted it.
type NoReplyError struct{ Err error }

func (e *NoReplyError) Error() string { return "no reply from receiver: " + e.Err.Error() }

func (e *NoReplyError) Unwrap() error { return e.Err }

// ErrorType names the error in the journal.
func (e *NoReplyError) ErrorType() string { return "NoReply" }

// Client talks to the receiver over HTTP. It is both the Sender and the
// Verifier.
type Client struct {
	Base string
	HTTP *http.Client
}

// NewClient returns a client for the receiver at base. Keep-alive is on, so
// a batch reuses one connection instead of paying a handshake per send.
// The idempotency key travels in the JSON body, not in an Idempotency-Key
// header, because net/http silently retries requests carrying that header
// when a connection drops, which would hide the lost reply this
// experiment injects.
func NewClient(base string) *Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	return &Client{Base: base, HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Send posts one delivery.
func (c *Client) Send(ctx context.Context, req SendRequest) (string, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encode send: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+PathSend, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("build send: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return "", &NoReplyError{Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return "", &UnavailableError{Status: resp.StatusCode}
	}
	var rep SendReply
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return "", &NoReplyError{Err: fmt.Errorf("decode reply: %w", err)}
	}
	if rep.Receipt == "" {
		return "", &NoReplyError{Err: fmt.Errorf("reply without receipt")}
	}
	return rep.Receipt, nil
}

// Lookup asks for the receipt of exactly k.
func (c *Client) Lookup(ctx context.Context, k Key) (string, bool, error) {
	return c.LookupAt(ctx, k, 0)
}

// Lookup is the parent's question to the receiver about one held send, as
// it records it: was the send of Key accepted, and with which receipt.
type Lookup struct {
	Key     string `json:"key"`
	Found   bool   `json:"found"`
	Receipt string `json:"receipt,omitempty"`
}

// Resolve is the resolve this answer calls for: delivered when the
// receiver holds the send, with its receipt.
func (l Lookup) Resolve(db string, k Key) ResolveArgs {
	return ResolveArgs{DB: db, Key: k, Delivered: l.Found, Receipt: l.Receipt}
}

// Ask looks k up at the receiver and returns the answer as recorded.
func (c *Client) Ask(ctx context.Context, k Key) (Lookup, error) {
	rc, found, err := c.Lookup(ctx, k)
	return Lookup{Key: k.String(), Found: found, Receipt: rc}, err
}

// LookupAt asks for the receipt of k on behalf of a lease holder of
// generation gen (0: none). A fencing receiver learns the generation from
// the question, so once a new holder has asked, a missing receipt stays
// missing: the old holder's late send is refused.
func (c *Client) LookupAt(ctx context.Context, k Key, gen int64) (string, bool, error) {
	q := url.Values{"job_id": {k.Job}, "item_id": {k.Item}, "step": {k.Step}}
	if gen > 0 {
		q.Set("generation", strconv.FormatInt(gen, 10))
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+PathReceipt+"?"+q.Encode(), nil)
	if err != nil {
		return "", false, fmt.Errorf("build lookup: %w", err)
	}
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return "", false, fmt.Errorf("look up %s: %w", k, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound:
		io.Copy(io.Discard, resp.Body)
		return "", false, nil
	case http.StatusOK:
		var rep SendReply
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			return "", false, fmt.Errorf("look up %s: decode: %w", k, err)
		}
		return rep.Receipt, rep.Receipt != "", nil
	}
	io.Copy(io.Discard, resp.Body)
	return "", false, fmt.Errorf("look up %s: receiver answered %d", k, resp.StatusCode)
}

// Ping opens the kept-alive connection to the receiver. The worker calls
// it before its timed loop: the article's receiver lives in its process,
// so the first send's connection set-up (about 10 ms on a loaded machine)
// is this harness's cost, not the batch's. The parent's process time
// still includes it.
func (c *Client) Ping(ctx context.Context) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+PathPing, nil)
	if err != nil {
		return fmt.Errorf("build ping: %w", err)
	}
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return fmt.Errorf("ping receiver: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("ping receiver: answered %d", resp.StatusCode)
	}
	return nil
}

// CloseIdle drops the kept-alive connections.
func (c *Client) CloseIdle() { c.HTTP.CloseIdleConnections() }
