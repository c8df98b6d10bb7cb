package durability

import (
	"fmt"
	"slices"
	"strings"

	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	wr "idemlab/worker/redelivery"
)

// Outcome tags, in the order they are joined. An outcome is the tags of
// one trial joined by "+", or OutcomeOK when it has none.
const (
	// TagCorrupt: PRAGMA integrity_check did not say "ok" after the cut.
	TagCorrupt = "corrupt"
	// TagLostAcked: the worker exited 0 (ACK, or a batch reported done)
	// and a row it committed was gone after the cut. This is lost work
	// even when nothing is duplicated: a broker does not redeliver an
	// acknowledged message.
	TagLostAcked = "lost-acked"
	// TagRolledBack: the worker had crashed, and a row it committed was
	// gone after the cut. Harmless by itself, since the work is redone.
	TagRolledBack = "rolled-back"
	// TagLostClaim: a claim the first process committed was not in the
	// file after the cut, so the claim no longer held others off for its
	// TTL. Whether it was ACKed says TagLostAcked or TagRolledBack.
	TagLostClaim = "lost-claim"
	// TagLostDownstream: a claim's downstream fields, once committed, were
	// gone or replaced later.
	TagLostDownstream = "lost-downstream"
	// TagDuplicate: the pattern's invariant of "at most once" broke: two
	// jobs for the event, two accepted sends for one key, or two claim
	// winners inside one TTL window.
	TagDuplicate = "duplicate"
	// TagMissing: after the redelivery or resume the work was still not
	// done: no job, or an item never delivered.
	TagMissing = "missing"
	// TagError: a worker after the cut failed (exit 3), e.g. on a file
	// the cut left unreadable.
	TagError = "error"
	// OutcomeOK is an outcome without tags.
	OutcomeOK = "ok"
	// AnyCorrupt in an allowed set admits every outcome that carries
	// TagCorrupt, whatever else it carries: synchronous=OFF promises
	// nothing about the file.
	AnyCorrupt = "corrupt+*"
)

var tagOrder = []string{TagCorrupt, TagLostAcked, TagRolledBack, TagLostClaim, TagLostDownstream, TagDuplicate, TagMissing, TagError}

// Join builds an outcome from tags, in the fixed order.
func Join(tags map[string]bool) string {
	var out []string
	for _, t := range tagOrder {
		if tags[t] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return OutcomeOK
	}
	return strings.Join(out, "+")
}

// Allows reports whether outcome is a member of the allowed set.
func Allows(allowed []string, outcome string) bool {
	if slices.Contains(allowed, outcome) {
		return true
	}
	return slices.Contains(allowed, AnyCorrupt) && slices.Contains(strings.Split(outcome, "+"), TagCorrupt)
}

// PointACK is the trial without a crash: the worker runs to its exit 0,
// and then the power is cut (or, for a kill, nothing happens).
const PointACK = "ack"

// Setting is one cell row of the matrix: how the file is opened and how
// the worker stops.
type Setting struct {
	JournalMode string
	Synchronous string
	Kind        string
	// Exclusive is locking_mode=EXCLUSIVE, which the batch journal uses.
	// It turns a DELETE journal into a persistent one whose header is
	// zeroed and synced at commit instead of the file being deleted.
	Exclusive bool
}

// Losses is the durability model: how many of the cut process's last
// commits a power cut may take back. It follows SQLite's documentation and
// the unix VFS (see faultvfs's package doc):
//
//   - a kill loses nothing the kernel has, whatever the settings;
//   - EXTRA syncs the directory after deleting a journal, so nothing
//     committed is lost;
//   - WAL with FULL syncs the WAL at every commit;
//   - WAL with NORMAL syncs only at checkpoints; a worker that exited 0
//     closed its connection, which checkpoints, so only a crashed worker's
//     commits since the last checkpoint (all of them, in a short process)
//     may go;
//   - DELETE with NORMAL or FULL deletes the committed journal without a
//     directory sync, so the journal may come back hot and roll back the
//     last commit, even after a clean exit; with EXCLUSIVE locking the
//     journal is kept and its header zeroed and synced instead, so nothing
//     is lost;
//   - OFF never syncs, so any suffix of the commits may go, and the file
//     may be torn (AnyCorrupt).
func Losses(s Setting, acked bool, commits int) []int {
	upTo := func(n int) []int {
		out := make([]int, 0, n+1)
		for k := 0; k <= n; k++ {
			out = append(out, k)
		}
		return out
	}
	switch {
	case s.Kind != KindPower, s.Synchronous == "EXTRA":
		return []int{0}
	case s.Synchronous == "OFF":
		return upTo(commits)
	case s.JournalMode == "WAL" && s.Synchronous == "FULL":
		return []int{0}
	case s.JournalMode == "WAL":
		if acked {
			return []int{0}
		}
		return upTo(commits)
	case s.Exclusive:
		return []int{0}
	default:
		return upTo(min(commits, 1))
	}
}

// Trace is a pattern's first process up to a point, as the logical model
// sees it: how many commits it made, whether it exited 0, and the
// outcome of the rest of the trial for each number of commits lost.
type Trace struct {
	Commits int
	Acked   bool
	// After gives the tags of the rest of the trial when the last k
	// commits were lost.
	After func(k int) map[string]bool
}

// Allowed is the oracle for one trial: every outcome the durability model
// admits, from the pattern's logical model and the commits a cut may take.
func Allowed(pattern string, s Setting, items int, point string) ([]string, error) {
	tr, err := TraceOf(pattern, items, point)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range Losses(s, tr.Acked, tr.Commits) {
		tags := tr.After(k)
		if k > 0 {
			if tr.Acked {
				tags[TagLostAcked] = true
			} else {
				tags[TagRolledBack] = true
			}
		}
		if o := Join(tags); !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	if s.Kind == KindPower && s.Synchronous == "OFF" {
		out = append(out, AnyCorrupt)
	}
	return out, nil
}

// Points lists a pattern's crash points as its logical model passes them;
// the run discovers them from a normal run's report and the fold checks
// the two agree.
func Points(pattern string, items int) []string {
	switch pattern {
	case PatternSeparate:
		return []string{wr.PointAfterJobInsert, wr.PointAfterJobCommit, wr.PointAfterProcessedCommit}
	case PatternSingle:
		return []string{wr.PointAfterProcessedInsert, wr.PointBeforeCommit, wr.PointAfterCommit}
	case PatternClaim:
		return []string{we.PointClaimSchema, we.PointClaimed, we.PointClaimFollowUp}
	case PatternBatch:
		var out []string
		for i := 1; i <= items; i++ {
			out = append(out, wb.ItemPoint(wb.PointBeforeSend, wb.ItemID(i)), wb.ItemPoint(wb.PointAfterSendAccepted, wb.ItemID(i)))
		}
		return out
	}
	return nil
}

// TraceOf runs a pattern's logical model to point.
func TraceOf(pattern string, items int, point string) (Trace, error) {
	if point != PointACK && !slices.Contains(Points(pattern, items), point) {
		return Trace{}, fmt.Errorf("%s has no crash point %q", pattern, point)
	}
	switch pattern {
	case PatternSeparate:
		return separateTrace(point), nil
	case PatternSingle:
		return singleTrace(point), nil
	case PatternBatch:
		return batchTrace(items, point), nil
	case PatternClaim:
		return claimTrace(point), nil
	}
	return Trace{}, fmt.Errorf("unknown pattern %q", pattern)
}

// separateTrace: delivery 1 commits the job, then the processed record;
// delivery 2 checks the record and, missing it, writes both again.
func separateTrace(point string) Trace {
	commits := map[string]int{wr.PointAfterJobInsert: 0, wr.PointAfterJobCommit: 1, wr.PointAfterProcessedCommit: 2, PointACK: 2}[point]
	return Trace{Commits: commits, Acked: point == PointACK, After: func(k int) map[string]bool {
		kept := commits - k
		jobs := 0
		if kept >= 1 {
			jobs++
		}
		if kept < 2 {
			jobs++ // the redelivery finds no processed record
		}
		return map[string]bool{TagDuplicate: jobs > 1, TagMissing: jobs == 0}
	}}
}

// singleTrace: one transaction holds both rows; a redelivery finds the
// claim or writes both.
func singleTrace(point string) Trace {
	commits := 0
	if point == wr.PointAfterCommit || point == PointACK {
		commits = 1
	}
	return Trace{Commits: commits, Acked: point == PointACK, After: func(int) map[string]bool { return map[string]bool{} }}
}

// batchTrace: run 1 commits IN_FLIGHT and SUCCEEDED for each step of each
// item; the send of an item follows its notify IN_FLIGHT. After the cut,
// run 2 skips SUCCEEDED rows, holds an IN_FLIGHT notify (resolved from the
// receiver, so never sent twice) and runs every step without a row, which
// sends again an item whose notify IN_FLIGHT was lost.
func batchTrace(items int, point string) Trace {
	const perItem = 2 * len(wb.Steps)
	notifyIF := func(i int) int { return perItem*(i-1) + 2*(len(wb.Steps)-1) + 1 } // commits up to and including item i's notify IN_FLIGHT
	commits, sent := perItem*items, items
	for i := 1; i <= items && point != PointACK; i++ {
		switch point {
		case wb.ItemPoint(wb.PointBeforeSend, wb.ItemID(i)):
			commits, sent = notifyIF(i), i-1
		case wb.ItemPoint(wb.PointAfterSendAccepted, wb.ItemID(i)):
			commits, sent = notifyIF(i), i
		}
	}
	return Trace{Commits: commits, Acked: point == PointACK, After: func(k int) map[string]bool {
		kept := commits - k
		dup := false
		for i := 1; i <= sent; i++ {
			if kept < notifyIF(i) {
				dup = true
			}
		}
		return map[string]bool{TagDuplicate: dup}
	}}
}
