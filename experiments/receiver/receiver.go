// Package receiver is the external system the workers send to: a real
// HTTP server on loopback, run by the parent, whose log is the parent's
// own witness of every send, kept whatever becomes of the worker.
package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"idemlab/worker/precise"
	"idemlab/worker/wire"
)

// Config chooses the receiver's latency and injected failure.
type Config struct {
	// SendLatency is applied to every send before anything else.
	SendLatency time.Duration
	// FailItem's first send fails in FailMode; empty FailItem or FailMode
	// injects nothing.
	FailItem string
	FailMode string
	// Fence refuses a send whose lease generation is below the highest
	// the receiver has seen for the job (in a send or a lookup), and logs
	// it as SendStale. The article's batch sends no generation.
	Fence bool
}

// Receiver is the external system of the article, run by the parent on
// loopback so that what it accepted survives any worker's death. It
// records accepts by (job_id, item_id, step) with a receipt and answers
// lookups by that triple.
type Receiver struct {
	URL string

	cfg      Config
	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	armed    bool
	accepts  map[wire.Key]int
	receipts map[wire.Key]string
	byIdem   map[string]string
	replays  int
	log      []Entry
	maxGen   map[string]int64
}

// Failure modes a Config can inject into one item's first send.
const (
	// BeforeAccept answers 503 without recording the send.
	BeforeAccept = "before_accept"
	// AfterAccept records the send, then drops the connection unanswered.
	AfterAccept = "after_accept"
)

// Outcomes of a send in the receiver's log.
const (
	// SendAccepted: recorded and answered with a receipt.
	SendAccepted = wire.OutcomeAccepted
	// SendAcceptedNoReply: recorded, then the connection was dropped
	// (the after_accept failure).
	SendAcceptedNoReply = "accepted_no_reply"
	// SendRejected: answered 503 and not recorded (before_accept).
	SendRejected = "rejected"
	// SendReplayed: answered from the idempotency-key store, not recorded
	// again.
	SendReplayed = wire.OutcomeReplayed
	// SendStale: refused by the fence, not recorded; its generation is
	// below one the receiver has already seen for the job.
	SendStale = "stale"
)

// Entry is one send as the receiver saw it. The receiver runs in the
// parent, so its log is the parent's own witness of every delivery, kept
// whatever becomes of the worker that sent it.
type Entry struct {
	Seq            int    `json:"seq"`
	At             string `json:"at"`
	Job            string `json:"job_id"`
	Item           string `json:"item_id"`
	Step           string `json:"step"`
	Digest         string `json:"digest"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Outcome        string `json:"outcome"`
	Receipt        string `json:"receipt,omitempty"`
	// Generation is the sender's fencing token; 0 when it sent none.
	Generation int64 `json:"generation,omitempty"`
	// Sender is the token of the process that sent it, taken from the
	// path prefix of the URL the parent gave that process
	// (wire.SenderURL); wire.SenderUnknown for a request without one.
	// Empty in folders of format 4 and older, whose receiver took no token.
	Sender string `json:"sender,omitempty"`
}

// LateSend is a send the receiver logged after the parent had seen its
// sender end: a request already on its way when the sender was killed. It
// is the sender's, and counts for its trial as the receiver logged it.
type LateSend struct {
	Condition string `json:"condition"`
	Trial     int    `json:"trial"`
	// Sender is the token, Step the step of the process that sent it.
	Sender  string `json:"sender"`
	Step    string `json:"step"`
	Seq     int    `json:"seq"`
	Item    string `json:"item_id"`
	Outcome string `json:"outcome"`
	// Note says what the parent saw of the sender.
	Note string `json:"note"`
}

// Notes of a LateSend.
const (
	NoteLateKilled = "landed after its sender was killed"
	NoteLateEnded  = "landed after its sender ended"
)

// LateNote is the note of a late send whose sender died from signal
// (empty when it exited).
func LateNote(signal string) string {
	if signal != "" {
		return NoteLateKilled
	}
	return NoteLateEnded
}

// SentFrom says, for a finding, how a process's sends were counted: by
// its sender token tok, or, in a folder of format 4 without one, by the
// window it ran in.
func SentFrom(tok string) string {
	if tok == "" {
		return "while it ran"
	}
	return "from its sender " + tok
}

// Accepted reports whether the entry is a delivery the receiver recorded.
func (e Entry) Accepted() bool {
	return e.Outcome == SendAccepted || e.Outcome == SendAcceptedNoReply
}

// Start listens on 127.0.0.1 with an ephemeral port.
func Start(cfg Config) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for receiver: %w", err)
	}
	r := &Receiver{
		URL: "http://" + ln.Addr().String(), cfg: cfg, ln: ln,
		armed:   cfg.FailItem != "" && cfg.FailMode != "",
		accepts: map[wire.Key]int{}, receipts: map[wire.Key]string{}, byIdem: map[string]string{},
		maxGen: map[string]int64{},
	}
	mux := http.NewServeMux()
	// Each route with and without a sender prefix: a request to the bare
	// URL is served and logged with wire.SenderUnknown.
	wire.Handle(mux, http.MethodPost, wire.PathSend, r.handleSend)
	wire.Handle(mux, http.MethodGet, wire.PathReceipt, r.handleReceipt)
	wire.Handle(mux, http.MethodGet, wire.PathPing, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// Close stops the server.
func (r *Receiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// Receipt is the receiver's receipt for a delivery, in the article's form.
func Receipt(item, digest string) string {
	if len(digest) > 8 {
		digest = digest[:8]
	}
	return "rcpt-" + item + "-" + digest
}

func (r *Receiver) handleSend(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<16))
	if err != nil {
		http.Error(w, "bad send request", http.StatusBadRequest)
		return
	}
	sender := wire.SenderOfRequest(req)
	if ps, key, ok := wire.ReadPublic(req, body); ok {
		r.handlePublic(w, ps, key, sender)
		return
	}
	var sr wire.SendRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sr); err != nil || sr.JobID == "" || sr.ItemID == "" || sr.Step == "" || sr.Digest == "" {
		http.Error(w, "bad send request", http.StatusBadRequest)
		return
	}
	precise.Sleep(r.cfg.SendLatency)
	k := wire.Key{Job: sr.JobID, Item: sr.ItemID, Step: sr.Step}
	e := Entry{Job: sr.JobID, Item: sr.ItemID, Step: sr.Step, Digest: sr.Digest, IdempotencyKey: sr.IdempotencyKey, Generation: sr.Generation, Sender: sender}
	r.mu.Lock()
	if sr.Generation > 0 {
		if r.cfg.Fence && sr.Generation < r.maxGen[sr.JobID] {
			e.Outcome = SendStale
			r.record(e)
			r.mu.Unlock()
			http.Error(w, "stale lease generation", wire.StatusStale)
			return
		}
		r.maxGen[sr.JobID] = max(r.maxGen[sr.JobID], sr.Generation)
	}
	inject := r.armed && sr.ItemID == r.cfg.FailItem
	if inject {
		r.armed = false
	}
	if inject && r.cfg.FailMode == BeforeAccept {
		e.Outcome = SendRejected
		r.record(e)
		r.mu.Unlock()
		http.Error(w, "injected failure before accept", http.StatusServiceUnavailable)
		return
	}
	if sr.IdempotencyKey != "" {
		if rc, ok := r.byIdem[sr.IdempotencyKey]; ok {
			r.replays++
			e.Outcome, e.Receipt = SendReplayed, rc
			r.record(e)
			r.mu.Unlock()
			writeJSON(w, wire.SendReply{Receipt: rc, Replayed: true})
			return
		}
	}
	rc := Receipt(sr.ItemID, sr.Digest)
	r.accepts[k]++
	r.receipts[k] = rc
	if sr.IdempotencyKey != "" {
		r.byIdem[sr.IdempotencyKey] = rc
	}
	e.Outcome, e.Receipt = SendAccepted, rc
	if inject {
		e.Outcome = SendAcceptedNoReply
	}
	r.record(e)
	r.mu.Unlock()
	if inject {
		// after_accept: the delivery is recorded, and the reply is lost.
		dropConnection(w)
		return
	}
	writeJSON(w, wire.SendReply{Receipt: rc})
}

// dropConnection closes the client's connection without writing a byte,
// which the client sees as a reply that never came.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// A reset rather than a FIN, so no half-read reply can be taken
		// for an answer.
		tc.SetLinger(0)
	}
	conn.Close()
}

// record appends to the log; the caller holds mu.
func (r *Receiver) record(e Entry) {
	e.Seq = len(r.log) + 1
	e.At = time.Now().UTC().Format(time.RFC3339Nano)
	r.log = append(r.log, e)
}

// LogSince returns the log entries after the first n, and the new length.
func (r *Receiver) LogSince(n int) ([]Entry, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > len(r.log) {
		n = len(r.log)
	}
	return append([]Entry{}, r.log[n:]...), len(r.log)
}

func (r *Receiver) handleReceipt(w http.ResponseWriter, req *http.Request) {
	k, gen, valid := wire.ParseLookup(req.URL.Query())
	if !valid {
		http.Error(w, "job_id, item_id and step are required", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	if gen > 0 {
		r.maxGen[k.Job] = max(r.maxGen[k.Job], gen)
	}
	rc, ok := r.receipts[k]
	r.mu.Unlock()
	if !ok {
		http.Error(w, "no receipt", http.StatusNotFound)
		return
	}
	writeJSON(w, wire.SendReply{Receipt: rc})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode reply", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// ReceiverStats summarises the accepts. Duplicates count one notification
// delivered more than once: accepts are grouped by (item_id, step), across
// job ids, because a new job id does not make a second notification any
// less of a duplicate for whoever receives it.
type ReceiverStats struct {
	Accepts       int `json:"accepts"`
	Duplicates    int `json:"duplicates"`
	SentOnceItems int `json:"sent_once_items"`
	// AcceptCounts maps "how many accepts" to how many (item, step) pairs
	// got that many, e.g. {"1": 9, "2": 41}.
	AcceptCounts map[string]int `json:"accept_counts"`
	// Replays are sends answered from the idempotency-key store.
	Replays int `json:"idempotent_replays"`
}

// Stats reads the counters.
func (r *Receiver) Stats() ReceiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	byNote := map[[2]string]int{}
	st := ReceiverStats{AcceptCounts: map[string]int{}, Replays: r.replays}
	for k, n := range r.accepts {
		byNote[[2]string{k.Item, k.Step}] += n
		st.Accepts += n
	}
	for _, n := range byNote {
		st.AcceptCounts[strconv.Itoa(n)]++
		st.Duplicates += n - 1
		if n == 1 {
			st.SentOnceItems++
		}
	}
	return st
}

// AcceptsOf returns the accepts of one notification over every job.
func (r *Receiver) AcceptsOf(item, step string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, c := range r.accepts {
		if k.Item == item && k.Step == step {
			n += c
		}
	}
	return n
}

// Keys lists the recorded triples, sorted, for tests.
func (r *Receiver) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.accepts {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}
