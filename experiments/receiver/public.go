package receiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	wb "idemlab/worker/batch"
)

// PublicSend is the body of the receiver's public contract, which pattern
// files' sends and users' handler programs speak: POST /send with
// {"event_id": …, "step": …} and an optional Idempotency-Key header. The
// answer is 200 with {"outcome": "accepted" | "replayed", "receipt": …}.
type PublicSend struct {
	EventID string `json:"event_id"`
	Step    string `json:"step"`
}

// PublicReply is the answer to a public send.
type PublicReply struct {
	Outcome string `json:"outcome"`
	Receipt string `json:"receipt"`
}

// HeaderIdempotencyKey is the header that carries a public send's key.
const HeaderIdempotencyKey = "Idempotency-Key"

// publicSend decodes body as a public send; ok is false for any other
// body, such as the batch worker's.
func publicSend(body []byte) (PublicSend, bool) {
	var ps PublicSend
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ps); err != nil || ps.EventID == "" || ps.Step == "" {
		return ps, false
	}
	return ps, true
}

// handlePublic records a public send. A key the receiver has accepted
// before is answered as replayed and not counted again; every send is in
// the log, which the parent reads as its own witness.
func (r *Receiver) handlePublic(w http.ResponseWriter, req *http.Request, ps PublicSend, sender string) {
	key := req.Header.Get(HeaderIdempotencyKey)
	wb.PreciseSleep(r.cfg.SendLatency)
	e := Entry{Item: ps.EventID, Step: ps.Step, IdempotencyKey: key, Sender: sender}
	r.mu.Lock()
	if rc, ok := r.byIdem[key]; ok && key != "" {
		r.replays++
		e.Outcome, e.Receipt = SendReplayed, rc
		r.record(e)
		r.mu.Unlock()
		writeJSON(w, PublicReply{Outcome: SendReplayed, Receipt: rc})
		return
	}
	e.Outcome, e.Receipt = SendAccepted, fmt.Sprintf("rcpt-%s-%s-%d", ps.EventID, ps.Step, len(r.log)+1)
	if key != "" {
		r.byIdem[key] = e.Receipt
	}
	r.record(e)
	r.mu.Unlock()
	writeJSON(w, PublicReply{Outcome: SendAccepted, Receipt: e.Receipt})
}

// AcceptedSends counts the log's accepted public sends per step for one
// event: what a pattern's sends invariant measures.
func AcceptedSends(log []Entry, eventID string) map[string]int64 {
	out := map[string]int64{}
	for _, e := range log {
		if e.Item == eventID && e.Job == "" && e.Accepted() {
			out[e.Step]++
		}
	}
	return out
}
