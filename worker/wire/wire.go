// Package wire is the receiver's protocol, the one definition both sides
// use: the workers that send (the batch journal, explore's lease holder,
// pattern files) and the receiver the parent runs (experiments/receiver),
// and the folds that read what was sent.
//
// The receiver serves three paths, each under a sender's prefix too
// (sender.go): POST PathSend, GET PathReceipt, GET PathPing. A send has one
// of two bodies. The batch worker's (SendRequest) names a job, an item and
// a step and is answered with a SendReply; the public one (PublicSend),
// which pattern files and users' programs speak, names an event and a step,
// carries its key in the Idempotency-Key header, and is answered with a
// PublicReply.
//
// Nothing here may change the bytes on the wire or in the records: the
// JSON tags are the recorded field names.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// The receiver's HTTP paths.
const (
	PathSend    = "/send"
	PathReceipt = "/receipt"
	PathPing    = "/ping"
)

// HeaderIdempotencyKey is the header that carries a public send's key.
const HeaderIdempotencyKey = "Idempotency-Key"

// StatusStale is the receiver's answer to a send a fencing receiver
// refuses: its lease generation is below one it has already seen.
const StatusStale = http.StatusConflict

// Key names one send of the batch protocol: a step of an item of a job.
// It is what a lookup asks for, and the batch journal's row key.
type Key struct {
	Job, Item, Step string
}

// String renders the key as job:item:step, which is also the idempotency
// key the sender may attach.
func (k Key) String() string { return k.Job + ":" + k.Item + ":" + k.Step }

// SendRequest is the batch protocol's body of POST PathSend: one delivery
// of the side-effect step.
type SendRequest struct {
	JobID  string `json:"job_id"`
	ItemID string `json:"item_id"`
	Step   string `json:"step"`
	Digest string `json:"digest"`
	// IdempotencyKey is "job:item:step" when the sender attaches one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Generation is the sender's lease generation, its fencing token; 0
	// (the article's batch) carries none.
	Generation int64 `json:"generation,omitempty"`
}

// SendReply is the receiver's answer to an accepted batch send, and to a
// lookup that found one.
type SendReply struct {
	Receipt string `json:"receipt"`
	// Replayed is true when the receiver recognised the idempotency key
	// and returned the first receipt without accepting again.
	Replayed bool `json:"replayed,omitempty"`
}

// Query parameters of GET PathReceipt.
const (
	queryJob        = "job_id"
	queryItem       = "item_id"
	queryStep       = "step"
	queryGeneration = "generation"
)

// lookupQuery is the query string that asks for the receipt of k on
// behalf of a lease holder of generation gen (0: none).
func lookupQuery(k Key, gen int64) string {
	q := url.Values{queryJob: {k.Job}, queryItem: {k.Item}, queryStep: {k.Step}}
	if gen > 0 {
		q.Set(queryGeneration, strconv.FormatInt(gen, 10))
	}
	return q.Encode()
}

// ParseLookup reads a lookup's query: the key asked for and the asker's
// generation (0 when it gave none or an unreadable one); ok is false
// when a part of the key is missing.
func ParseLookup(q url.Values) (k Key, gen int64, ok bool) {
	k = Key{Job: q.Get(queryJob), Item: q.Get(queryItem), Step: q.Get(queryStep)}
	gen, _ = strconv.ParseInt(q.Get(queryGeneration), 10, 64)
	return k, gen, k.Job != "" && k.Item != "" && k.Step != ""
}

// PublicSend is the body of the public send: POST PathSend with
// {"event_id": …, "step": …} and an optional HeaderIdempotencyKey.
type PublicSend struct {
	EventID string `json:"event_id"`
	Step    string `json:"step"`
}

// PublicReply is the answer to a public send: 200 with
// {"outcome": OutcomeAccepted | OutcomeReplayed, "receipt": …}.
type PublicReply struct {
	Outcome string `json:"outcome"`
	Receipt string `json:"receipt"`
}

// Outcomes of a public send's answer.
const (
	// OutcomeAccepted: recorded and answered with a new receipt.
	OutcomeAccepted = "accepted"
	// OutcomeReplayed: the key was accepted before; answered with the
	// first receipt and not counted again.
	OutcomeReplayed = "replayed"
)

// NewPublicRequest builds the public send of ps to the receiver at base,
// with key as its Idempotency-Key when key is not empty.
func NewPublicRequest(ctx context.Context, base string, ps PublicSend, key string) (*http.Request, error) {
	body, err := json.Marshal(ps)
	if err != nil {
		return nil, fmt.Errorf("encode send: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+PathSend, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(HeaderIdempotencyKey, key)
	}
	return req, nil
}

// ReadPublic reads a send as the receiver gets it, body already read:
// the public send and its key; ok is false for any other body, such as
// the batch protocol's.
func ReadPublic(req *http.Request, body []byte) (ps PublicSend, key string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ps); err != nil || ps.EventID == "" || ps.Step == "" {
		return ps, "", false
	}
	return ps, req.Header.Get(HeaderIdempotencyKey), true
}
