package explore

import (
	"idemlab/experiments/subject"
	"idemlab/experiments/subject/builtin"
	wb "idemlab/worker/batch"
	wr "idemlab/worker/redelivery"
)

// The subjects explore runs are values of subject.Subject, defined with
// their models in subject/builtin; explore names which it runs, with
// which classes (newSettings) and under which oracle (oracle.go). These
// names are the settings' words for the subject's types.
type (
	Pattern = subject.Subject
	Window  = subject.Window
)

// OutcomeClean is the outcome that breaks nothing.
const OutcomeClean = subject.OutcomeClean

// Patterns is the registry of built-in subjects, in report order: the
// hand-written article workers, which fold folders of format 6 or older
// and race on PostgreSQL, then BuiltIn.
func Patterns() []Pattern {
	return append([]Pattern{builtin.Redelivery(wr.SeparateCommit), builtin.Redelivery(wr.SingleTransaction)}, BuiltIn()...)
}

// BuiltIn are the subjects a run on SQLite plans besides the article
// files: what no pattern file can express, the batch journal against the
// receiver, the TTL claim's probe inside the TTL, and the lease takeover.
func BuiltIn() []Pattern {
	return []Pattern{builtin.Batch(wb.ModeJournal), builtin.Batch(wb.ModeRerunAll), builtin.Claim(), builtin.Lease()}
}

// LookupPattern finds a pattern by name.
func LookupPattern(name string) (Pattern, bool) {
	for _, p := range Patterns() {
		if p.Name == name {
			return p, true
		}
	}
	return Pattern{}, false
}

// params are what the settings give the subjects.
func (st Settings) params() subject.Params {
	return subject.Params{EventID: st.EventID, JobKey: st.JobKey, Items: st.Items, MaxAttempts: st.MaxAttempts, Backend: st.Backend, SQLite: st.SQLite}
}
