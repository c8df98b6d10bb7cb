package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

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

// Client speaks the batch protocol to the receiver over HTTP: the batch
// worker's Sender and Verifier, explore's lease holder, and the parent's
// lookups.
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

// LookupAt asks for the receipt of k on behalf of a lease holder of
// generation gen (0: none). A fencing receiver learns the generation from
// the question, so once a new holder has asked, a missing receipt stays
// missing: the old holder's late send is refused.
func (c *Client) LookupAt(ctx context.Context, k Key, gen int64) (string, bool, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+PathReceipt+"?"+lookupQuery(k, gen), nil)
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
