package batch

import (
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	"idemlab/worker/wire"
)

// itemDigest is the digest of the body a run gives item: changed for the
// failing item when the run changes it. ok is false for an item the
// settings do not have.
func (f *folder) itemDigest(item string, changed bool) (string, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(item, "item-"))
	if err != nil || n < 1 || n > f.st.Items || wb.ItemID(n) != item {
		return "", false
	}
	body := wb.ItemBody(n)
	if changed && n == f.st.FailAt {
		body = wb.ChangedBody(n)
	}
	return wb.Digest(wb.Item{ID: item, Body: body}), true
}

// checkSends checks the receiver's log entries since the previous line:
// numbered on from the last, sent while this process ran, by this
// process's job, and answered as the receiver's rules answer.
func (f *folder) checkSends(ln *line) {
	tf, l := ln.tf, ln.l
	for i, e := range ln.o.Sends {
		fld := results.Field("sends", i)
		tf.seq++
		if e.Seq != tf.seq {
			f.c.Obs(l, fld+".seq", "is %d, want %d: the receiver numbers its log from 1 without gaps", e.Seq, tf.seq)
			tf.seq = e.Seq
		}
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			f.c.Obs(l, fld+".at", "%q is not a time", e.At)
		} else {
			f.checkSender(ln, fld, e, at)
		}
		if e.Step != wb.StepNotify {
			f.c.Obs(l, fld+".step", "is %q; only %s sends", e.Step, wb.StepNotify)
		}
		digest, ok := f.itemDigest(e.Item, true)
		orig, _ := f.itemDigest(e.Item, false)
		if !ok || (e.Digest != digest && e.Digest != orig) {
			f.c.Obs(l, fld+".digest", "%q for %q is not the digest of any body the settings give it", e.Digest, e.Item)
		}
		f.checkAnswer(ln, fld, e)
		tf.sends = append(tf.sends, e)
	}
}

// checkSender checks who sent e. In a folder of format 4 the receiver
// logged no sender, and a send is the running process's: it must fall in
// its window. Otherwise e names its sender: a run of the trial started by
// then. Its own send falls in its window; an earlier run's landed after
// the parent saw that run end, and is recorded as a late send.
func (f *folder) checkSender(ln *line, fld string, e receiver.Entry, at time.Time) {
	tf, l := ln.tf, ln.l
	if !tf.tokens {
		if ln.pok && !ln.w.holds(at) {
			f.c.Obs(l, fld+".at", "%s is outside process %d's window %s to %s; a send comes from the process running", e.At, ln.o.ProcessID, ln.w.start.Format(time.RFC3339Nano), ln.w.end.Format(time.RFC3339Nano))
		}
		return
	}
	s, ok := tf.started[e.Sender]
	switch {
	case !ok:
		f.c.Obs(l, fld+".sender", "is %q, no run of trial %d started by then; each run sends with the token of the receiver URL it was given", e.Sender, tf.n)
	case e.Sender == ln.o.Sender:
		if ln.pok && !ln.w.holds(at) {
			f.c.Obs(l, fld+".at", "%s is outside its sender's window %s to %s, but the parent read the log right after that run ended", e.At, ln.w.start.Format(time.RFC3339Nano), ln.w.end.Format(time.RFC3339Nano))
		}
	default:
		if at.Before(s.w.end.Add(-clockSlack)) {
			f.c.Obs(l, fld+".at", "%s, before its sender %s (%s) ended at %s, but the parent read the log after that and did not find it", e.At, e.Sender, s.step, s.w.end.Format(time.RFC3339Nano))
		}
		f.late = append(f.late, receiver.LateSend{
			Condition: ln.cf.c.Name, Trial: tf.n, Sender: e.Sender, Step: s.step,
			Seq: e.Seq, Item: e.Item, Outcome: e.Outcome, Note: receiver.LateNote(s.signal),
		})
	}
}

// checkAnswer checks the receiver's outcome and receipt for one send
// against its rules: the armed failure once, a replay for a key it has
// seen, an accept otherwise; and it remembers what was accepted.
func (f *folder) checkAnswer(ln *line, fld string, e receiver.Entry) {
	tf := ln.tf
	inject := tf.armed && e.Item == wb.ItemID(f.st.FailAt)
	var want string
	switch {
	case inject && ln.cf.c.Mode == BeforeAccept:
		want = receiver.SendRejected
	case e.IdempotencyKey != "" && tf.idem[e.IdempotencyKey] != "":
		want = receiver.SendReplayed
	case inject:
		want = receiver.SendAcceptedNoReply
	default:
		want = receiver.SendAccepted
	}
	if inject {
		tf.armed = false
	}
	if e.Outcome != want {
		f.c.Obs(ln.l, fld+".outcome", "is %q, but the receiver's rules give %q for this send", e.Outcome, want)
	}
	wantRc := ""
	switch e.Outcome {
	case receiver.SendAccepted, receiver.SendAcceptedNoReply:
		wantRc = receiver.Receipt(e.Item, e.Digest)
		tf.accepts[wire.Key{Job: e.Job, Item: e.Item, Step: e.Step}] = wantRc
		if e.IdempotencyKey != "" {
			tf.idem[e.IdempotencyKey] = wantRc
		}
	case receiver.SendReplayed:
		wantRc = tf.idem[e.IdempotencyKey]
	}
	if e.Receipt != wantRc {
		f.c.Obs(ln.l, fld+".receipt", "is %q, want %q", e.Receipt, wantRc)
	}
}

// checkRows checks the journal the parent read: rows in key order, each
// for an item and digest the settings give, and every row that changed
// since the previous read written while this process ran.
func (f *folder) checkRows(ln *line) {
	l, o := ln.l, ln.o
	prev := byKey(ln.tf.rows)
	seen := map[wire.Key]bool{}
	for i, r := range o.Journal {
		fld := results.Field("journal", i)
		k := r.Key()
		if i > 0 && !keyLess(o.Journal[i-1].Key(), k) {
			f.c.Obs(l, fld, "%s is out of key order or repeated; the parent lists rows by job, item, step", k)
		}
		seen[k] = true
		f.checkRow(ln, fld, r)
		if p, had := prev[k]; had && p == r {
			continue
		}
		if ln.pok && !ln.w.holds(unixTime(r.UpdatedAt)) {
			f.c.Obs(l, fld+".updated_at", "%s changed since the previous read, but its updated_at %s is outside process %d's window", k, unixTime(r.UpdatedAt).Format(time.RFC3339Nano), o.ProcessID)
		}
		if ln.a.Kind == ActResolveHeld && k != ln.key {
			f.c.Obs(l, fld, "%s changed during the resolve of %s", k, ln.key)
		}
	}
	for k := range prev {
		if seen[k] {
			continue
		}
		if ln.a.Kind != ActResolveHeld || k != ln.key {
			f.c.Obs(l, "journal", "row %s is gone; only a resolve with delivered=false deletes a row, and only its own", k)
		}
	}
}

// checkRow checks one row's values against the settings and, for a
// finished send, its receipt against the receiver's log.
func (f *folder) checkRow(ln *line, fld string, r wb.JournalRow) {
	l := ln.l
	if r.Job != f.st.JobID && r.Job != f.st.NewJobID {
		f.c.Obs(l, fld+".job_id", "%q is not a job id of the settings", r.Job)
	}
	if !validStep(r.Step) {
		f.c.Obs(l, fld+".step_name", "%q is not a step", r.Step)
	}
	switch wb.Status(r.Status) {
	case wb.InFlight, wb.Succeeded, wb.Failed:
	default:
		f.c.Obs(l, fld+".status", "%q is not IN_FLIGHT, SUCCEEDED or FAILED", r.Status)
	}
	orig, ok := f.itemDigest(r.Item, false)
	if !ok || r.Digest != orig {
		f.c.Obs(l, fld+".payload_digest", "is not the digest of %s's body; no run writes a row for a changed body the journal does not hold", r.Item)
	}
	if r.Status == string(wb.Succeeded) && wb.IsSideEffect(r.Step) {
		k := r.Key()
		if rc, ok := ln.tf.accepts[k]; !ok || rc != r.Receipt {
			f.c.Obs(l, fld+".receipt", "%q, but the receiver's log gives %s the receipt %q", r.Receipt, k, rc)
		}
	}
}

// byKey indexes rows by their primary key.
func byKey(rows []wb.JournalRow) map[wire.Key]wb.JournalRow {
	out := map[wire.Key]wb.JournalRow{}
	for _, r := range rows {
		out[r.Key()] = r
	}
	return out
}

func keyLess(a, b wire.Key) bool {
	if a.Job != b.Job {
		return a.Job < b.Job
	}
	if a.Item != b.Item {
		return a.Item < b.Item
	}
	return a.Step < b.Step
}

func validStep(s string) bool { return stepIndex(s) >= 0 }

func unixTime(sec float64) time.Time {
	return time.Unix(0, int64(sec*1e9))
}

func stepIndex(s string) int {
	for i, x := range wb.Steps {
		if s == x {
			return i
		}
	}
	return -1
}
