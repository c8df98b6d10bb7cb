package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/subject"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
)

// Tables of the lease pattern.
const (
	TableLease        = we.TableLease
	TableLeaseJournal = we.TableLeaseJournal
	TableLeaseLog     = we.TableLeaseLog
)

// LeaseTTLMS is the lease's TTL. A takeover waits for it in real time, so
// it is short; the sweep's successor shifts its clock instead.
const LeaseTTLMS = 300

// LeaseWaitMS bounds a successor's wait for a live lease.
const LeaseWaitMS = 10_000

// LeasePollMS is how often a successor tries the lease.
const LeasePollMS = 20

// Holders of the lease pattern: the first holder and its successor.
const (
	HolderA = "a"
	HolderB = "b"
)

// StaleWrites names an outcome part: journal writes by a superseded holder.
func StaleWrites(n int) string { return "stale-writes-" + strconv.Itoa(n) }

func LeaseArgs(st subject.Params, f subject.Files, holder string, offset int64, fence bool, pauseAt string) []string {
	a := we.LeaseArgs{DB: f.DB, Job: st.JobKey, Receiver: f.Receiver, Holder: holder, Items: st.Items,
		TTLMS: LeaseTTLMS, OffsetMS: offset, Fence: fence, WaitMS: LeaseWaitMS, PollMS: LeasePollMS}
	if pauseAt != "" {
		a.PauseAt, a.ReadyFD = pauseAt, 3
	}
	return a.Argv()
}

// Lease is articles 002 and 003 combined: the batch journal run
// under a TTL lease that every journal write renews, with generations as
// fencing tokens on every write and send. A crashed holder's job is taken
// over after the TTL (the successor's clock shifted past it) and resumed
// from the journal.
func Lease() subject.Subject {
	return subject.Subject{
		Name:       "lease-batch",
		Worker:     we.LeaseName,
		TrialShare: 12,
		Sends:      true,
		Fenced:     true,
		Takeover: &subject.Takeover{
			Args: func(st subject.Params, f subject.Files, successor, fence bool, pauseAt string) []string {
				if successor {
					return LeaseArgs(st, f, HolderB, 0, fence, "")
				}
				return LeaseArgs(st, f, HolderA, 0, fence, pauseAt)
			},
			// The holder acts as a non-holder only from its first step on.
			Window: subject.Window{From: wb.ItemPoint(wb.PointBeforeSend, wb.ItemID(1))},
			Damage: takeoverModel(),
		},
		Points: func(st subject.Params) []string { return we.LeasePoints(st.Items) },
		Args:   func(st subject.Params, f subject.Files) []string { return LeaseArgs(st, f, HolderA, 0, true, "") },
		Recovery: func(st subject.Params, f subject.Files, done []string, _ subject.State) (subject.Action, bool) {
			if len(done) > 0 {
				return subject.Action{}, false
			}
			return subject.Action{Step: subject.StepRecovery, Role: subject.RoleRecovery, Worker: we.LeaseName, Args: LeaseArgs(st, f, HolderB, LeaseTTLMS+1, true, "")}, true
		},
		Read:      readLease,
		CheckRows: checkLeaseRows,
		Classify:  classifyLease,
		Invariants: []subject.Invariant{
			{Name: "each-item-sent-once", Check: eachItemOnce},
			{Name: "no-stale-accept", Check: noStaleAccept},
			{Name: "no-stale-journal-write", Check: noStaleWrite},
			{Name: "no-overlapping-holders", Check: noOverlap},
			{Name: "journal-complete", Check: leaseJournalComplete},
			{Name: "recovery-acknowledged", Check: recoveryAcknowledged},
		},
		Model: func(subject.Params) []string { return []string{subject.OutcomeClean} },
		Account: func(st subject.Params, role, sender string, raw json.RawMessage, before, after subject.State) []string {
			var r we.LeaseResult
			if err := results.DecodeStrict(raw, &r); err != nil {
				return []string{fmt.Sprintf("the lease worker's result: %v", err)}
			}
			var out []string
			granted := false
			for _, e := range leaseLog(after) {
				granted = granted || (e.Kind == we.LogGrant && e.Holder == r.Holder && e.Gen == r.Generation)
			}
			if !granted {
				out = append(out, fmt.Sprintf("the worker says %s holds generation %d, but the log records no such grant", r.Holder, r.Generation))
			}
			sent := 0
			for _, x := range sentBy(sender, before, after) {
				if x.Gen == r.Generation {
					sent++
				}
			}
			if sent != r.Sent {
				out = append(out, fmt.Sprintf("the worker says it sent %d, the receiver accepted %d of generation %d %s", r.Sent, sent, r.Generation, receiver.SentFrom(sender)))
			}
			return out
		},
	}
}

// readLease lists the lease, its journal and its log; a file or table a
// killed worker never created reads as empty.
func readLease(ctx context.Context, path string) (subject.State, error) {
	return readWith(ctx, path, we.LeaseOptions(path), we.ReadLease)
}

// leaseLog parses the recorded lease_log rows; a row that does not parse
// is left out, and checkLeaseRows reports it.
func leaseLog(s subject.State) []we.LogEntry {
	var out []we.LogEntry
	for _, r := range s[TableLeaseLog] {
		if e, ok := we.ParseLogLine(r); ok {
			out = append(out, e)
		}
	}
	return out
}

func checkLeaseRows(st subject.Params, s subject.State) []string {
	var bad []string
	items := itemIDs(st.Items)
	for _, t := range []string{TableLease, TableLeaseJournal, TableLeaseLog, TableSends} {
		if _, ok := s[t]; !ok {
			bad = append(bad, fmt.Sprintf("table %s is missing", t))
		}
	}
	for t := range s {
		if t != TableLease && t != TableLeaseJournal && t != TableLeaseLog && t != TableSends {
			bad = append(bad, fmt.Sprintf("table %s is not a table of the pattern", t))
		}
	}
	if len(s[TableLease]) > 1 {
		bad = append(bad, fmt.Sprintf("%d lease rows for one job", len(s[TableLease])))
	}
	for i, r := range s[TableLeaseJournal] {
		f := strings.Split(r, "|")
		if len(f) != 4 || !slices.Contains(items, f[0]) || !slices.Contains(wb.Steps[:], f[1]) {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, not a row of the settings' items and steps", TableLeaseJournal, i, r))
		}
	}
	log := leaseLog(s)
	if len(log) != len(s[TableLeaseLog]) {
		bad = append(bad, fmt.Sprintf("%s has rows that do not parse", TableLeaseLog))
	}
	for i, e := range log {
		if e.Seq != i+1 || (e.Holder != HolderA && e.Holder != HolderB) || (e.Kind != we.LogGrant && e.Kind != we.LogWrite) {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, not entry %d by holder a or b", TableLeaseLog, i, s[TableLeaseLog][i], i+1))
		}
	}
	for i, r := range s[TableSends] {
		x, ok := subject.ParseSend(r)
		if !ok || x.Seq != i+1 || !slices.Contains(items, x.Item) || x.Step != wb.StepNotify || x.Gen < 1 {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, not the receiver's entry %d for a fenced notification", TableSends, i, r, i+1))
		}
	}
	return bad
}

// staleWrites counts journal writes made with a generation below one
// granted before them.
func staleWrites(s subject.State) []we.LogEntry {
	var out []we.LogEntry
	var top int64
	for _, e := range leaseLog(s) {
		switch {
		case e.Kind == we.LogGrant:
			top = max(top, e.Gen)
		case e.Gen < top:
			out = append(out, e)
		}
	}
	return out
}

// staleAccepts are sends the receiver accepted after it had seen a newer
// generation of the job, in its own log's order.
func staleAccepts(s subject.State) []subject.Send {
	var out []subject.Send
	var top int64
	for _, x := range subject.Sends(s) {
		if x.Accepted() && x.Gen < top {
			out = append(out, x)
		}
		top = max(top, x.Gen)
	}
	return out
}

func classifyLease(st subject.Params, s subject.State) string {
	var parts []string
	if o := classifyBatch(st, s); o != subject.OutcomeClean {
		parts = append(parts, o)
	}
	if n := len(staleWrites(s)); n > 0 {
		parts = append(parts, StaleWrites(n))
	}
	if len(parts) == 0 {
		return subject.OutcomeClean
	}
	return strings.Join(parts, ",")
}

// noStaleAccept: the receiver accepted no send of a generation older than
// one it had already seen. The fence refuses such sends; without it they
// land.
func noStaleAccept(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	var out []string
	for _, x := range staleAccepts(last.Rows) {
		out = append(out, fmt.Sprintf("receiver entry %d accepted %s of generation %d after a newer generation", x.Seq, x.Item, x.Gen))
	}
	return out
}

// noStaleWrite: no journal write by a holder whose lease had been granted
// to a newer generation: a write by a non-holder.
func noStaleWrite(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	var out []string
	for _, e := range staleWrites(last.Rows) {
		out = append(out, fmt.Sprintf("log entry %d: %s wrote %s:%s %s with generation %d after a newer grant", e.Seq, e.Holder, e.Item, e.Step, e.Status, e.Gen))
	}
	return out
}

// noOverlap: each grant came more than the TTL after the previous
// generation's last renewal (its grant or a journal write before the new
// grant), so no two holders held the job at once.
func noOverlap(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	var out []string
	lastRenew := map[int64]int64{}
	for _, e := range leaseLog(last.Rows) {
		if e.Kind == we.LogGrant {
			if prev, ok := lastRenew[e.Gen-1]; ok && e.AtMS-prev <= LeaseTTLMS {
				out = append(out, fmt.Sprintf("generation %d granted to %s %d ms after generation %d last renewed, within the TTL of %d ms", e.Gen, e.Holder, e.AtMS-prev, e.Gen-1, LeaseTTLMS))
			}
			if _, taken := lastRenew[e.Gen+1]; !taken {
				lastRenew[e.Gen] = e.AtMS
			}
			continue
		}
		if _, superseded := lastRenew[e.Gen+1]; !superseded {
			lastRenew[e.Gen] = e.AtMS
		}
	}
	return out
}

// leaseJournalComplete: after the recovery every step of every item is
// SUCCEEDED.
func leaseJournalComplete(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	done := map[string]bool{}
	for _, r := range last.Rows[TableLeaseJournal] {
		f := strings.Split(r, "|")
		if len(f) == 4 && f[2] == string(wb.Succeeded) {
			done[f[0]+":"+f[1]] = true
		}
	}
	var out []string
	for _, it := range itemIDs(h.Items) {
		for _, s := range wb.Steps {
			if !done[it+":"+s] {
				out = append(out, fmt.Sprintf("%s:%s is not SUCCEEDED after the recovery", it, s))
			}
		}
	}
	return out
}

// FencedTakeover is what a fenced takeover over the window's points win
// must record, by the lease's model (explore's oracle asks it): every
// point's paused holder, run on, finds its lease lost, and every send it
// then attempts (a before-send point) is refused.
func FencedTakeover(win []string) (lost, refused int) {
	for _, p := range win {
		if strings.HasPrefix(p, wb.PointBeforeSend+":") {
			refused++
		}
	}
	return len(win), refused
}

// takeoverModel is the unfenced holder's damage by where it was paused:
// before a send it sends again and overwrites the row; after an accepted
// send it overwrites the row; right after its grant it finds every step
// done and does nothing.
func takeoverModel() []string {
	return []string{Duplicates(1) + "," + StaleWrites(1), StaleWrites(1)}
}
