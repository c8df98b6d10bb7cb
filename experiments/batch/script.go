package batch

import (
	wb "idemlab/worker/batch"
)

// The conditions, each run for every mode and trial.
const (
	CondRerunAll     = "rerun-all"
	CondJournal      = "journal"
	CondHardCrash    = "journal-hard-crash"
	CondRerunAllKey  = "rerun-all-idempotency-key"
	CondInputChanged = "input-changed"
	CondNewJobID     = "new-job-id"
)

// Conditions lists the conditions in the order they run.
var Conditions = []string{CondRerunAll, CondJournal, CondHardCrash, CondRerunAllKey, CondInputChanged, CondNewJobID}

// ConditionSummary says what each condition shows.
var ConditionSummary = map[string]string{
	CondRerunAll:     "no journal: run 1 fails at item K, run 2 redoes every step",
	CondJournal:      "journal: run 1 fails at K, run 2 holds K unknown, the receiver is checked and resolve called, run 3 finishes",
	CondHardCrash:    "journal, but run 1 dies (exit 17) at item K's send instead of raising",
	CondRerunAllKey:  "no journal, sends carry the job:item:step idempotency key",
	CondInputChanged: "journal: item K's body changes after run 1, so K is held input_changed",
	CondNewJobID:     "journal: after run 1, a run under a fresh job id re-sends everything",
}

// Action kinds.
const (
	// ActRun runs the batch worker once.
	ActRun = "run"
	// ActResolveHeld checks the receiver for every item the previous run
	// held as unknown and calls resolve with what it found, as the person
	// of the article does.
	ActResolveHeld = "resolve-held"
)

// Action is one step of a condition's script. The parent executes the
// script and the oracle models it, so both follow one plan.
type Action struct {
	Kind string
	// Run settings.
	Mode           string // wb.ModeJournal or wb.ModeRerunAll
	Job            string
	ChangeItem     bool
	IdempotencyKey bool
	Verify         bool
	// CrashPoint, when set, is the crash point chosen for this run.
	CrashPoint string
}

// Params is everything a condition depends on.
type Params struct {
	Condition string
	Mode      string
	Job       string
	Items     int
	FailAt    int
}

// NewJobID is the fresh job id of the new-job-id condition.
func NewJobID(job string) string { return job + "-new" }

// Injects reports whether the receiver injects the mode's failure on item
// K's first send. The hard crash replaces the injected failure.
func Injects(p Params) bool { return p.Condition != CondHardCrash }

// CrashPoint is the hard-crash point for a mode: after the accept for
// after_accept, and before the send leaves for before_accept, so that
// both leave the row IN_FLIGHT with the receiver's state differing.
func CrashPoint(p Params) string {
	item := wb.ItemID(p.FailAt)
	if p.Mode == AfterAccept {
		return wb.ItemPoint(wb.PointAfterSendAccepted, item)
	}
	return wb.ItemPoint(wb.PointBeforeSend, item)
}

// Script is the plan of one condition.
func Script(p Params) []Action {
	journal := func(a Action) Action { a.Kind, a.Mode, a.Job = ActRun, wb.ModeJournal, p.Job; return a }
	rerun := func(a Action) Action { a.Kind, a.Mode, a.Job = ActRun, wb.ModeRerunAll, p.Job; return a }
	resolve := Action{Kind: ActResolveHeld, Job: p.Job}
	switch p.Condition {
	case CondRerunAll:
		return []Action{rerun(Action{}), rerun(Action{})}
	case CondRerunAllKey:
		return []Action{rerun(Action{IdempotencyKey: true}), rerun(Action{IdempotencyKey: true})}
	case CondJournal:
		// Run 1 verifies, as the article's does; it finds nothing to verify.
		return []Action{journal(Action{Verify: true}), journal(Action{}), resolve, journal(Action{})}
	case CondHardCrash:
		return []Action{journal(Action{CrashPoint: CrashPoint(p)}), journal(Action{}), resolve, journal(Action{})}
	case CondInputChanged:
		return []Action{journal(Action{}), journal(Action{ChangeItem: true}), journal(Action{ChangeItem: true})}
	case CondNewJobID:
		second := journal(Action{})
		second.Job = NewJobID(p.Job)
		return []Action{journal(Action{}), second}
	}
	return nil
}

// UsesJournal reports whether any run of the condition keeps a journal.
func UsesJournal(p Params) bool {
	for _, a := range Script(p) {
		if a.Kind == ActRun && a.Mode == wb.ModeJournal {
			return true
		}
	}
	return false
}
