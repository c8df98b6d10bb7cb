package durability

import (
	"slices"
	"strings"

	"idemlab/experiments/engine"
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
	// AnyOutcome in an allowed set admits every outcome: where a torn
	// cut leaves a database file that no journal or WAL repairs
	// (synchronous=OFF), SQLite promises nothing: a torn page may fail
	// integrity_check or keep half a commit that checks as ok.
	AnyOutcome = "*"
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
	for _, a := range allowed {
		if tag, ok := strings.CutSuffix(a, anyWith); ok && slices.Contains(strings.Split(outcome, "+"), tag) {
			return true
		}
	}
	return slices.Contains(allowed, AnyOutcome)
}

// AnyWith in an allowed set admits every outcome that carries tag: where
// the model says only that (a PostgreSQL power cut that loses the first
// process's commits, or may leave a page its checksum rejects), what the
// pattern then makes of the damaged cluster is not predicted.
func AnyWith(tag string) string { return tag + anyWith }

// anyWith ends an AnyWith entry.
const anyWith = "+*"

// PointACK is the trial without a crash: the worker runs to its exit 0,
// and then the power is cut (or, for a kill, nothing happens): the
// engine's PointACK, the sweep's first trial.
const PointACK = engine.PointACK

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
