package receiver

import (
	"fmt"
	"net/http"

	"idemlab/worker/precise"
	"idemlab/worker/wire"
)

// handlePublic records a public send (wire.PublicSend) with its key. A
// key the receiver has accepted before is answered as replayed and not
// counted again; every send is in the log, which the parent reads as its
// own witness.
func (r *Receiver) handlePublic(w http.ResponseWriter, ps wire.PublicSend, key, sender string) {
	precise.Sleep(r.cfg.SendLatency)
	e := Entry{Item: ps.EventID, Step: ps.Step, IdempotencyKey: key, Sender: sender}
	r.mu.Lock()
	if rc, ok := r.byIdem[key]; ok && key != "" {
		r.replays++
		e.Outcome, e.Receipt = SendReplayed, rc
		r.record(e)
		r.mu.Unlock()
		writeJSON(w, wire.PublicReply{Outcome: SendReplayed, Receipt: rc})
		return
	}
	e.Outcome, e.Receipt = SendAccepted, fmt.Sprintf("rcpt-%s-%s-%d", ps.EventID, ps.Step, len(r.log)+1)
	if key != "" {
		r.byIdem[key] = e.Receipt
	}
	r.record(e)
	r.mu.Unlock()
	writeJSON(w, wire.PublicReply{Outcome: SendAccepted, Receipt: e.Receipt})
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
