package durability

import "strings"

// Severity ranks an outcome by what it costs the work, for the heat map's
// colours and the matrix in the extra data. The order is the reader's:
// nothing lost, then a crashed worker's commit taken back and redone, then
// committed or acknowledged work lost, then work done twice, then a file
// or a result that is broken.
type Severity int

// Severities, from harmless to worst. NotRun marks a cell with no trial.
const (
	NotRun Severity = iota - 1
	// SeverityNone: nothing lost, nothing twice.
	SeverityNone
	// SeverityRedone: a crashed worker's commit was rolled back (a claim
	// included); the redelivery or resume did the work again.
	SeverityRedone
	// SeverityLost: work that was committed and reported lost: an ACKed
	// commit, or a claim's downstream fields once committed.
	SeverityLost
	// SeverityDuplicate: the work was done twice.
	SeverityDuplicate
	// SeverityBroken: the file failed integrity_check, the work is
	// missing at the end, or a later worker failed on the file.
	SeverityBroken
)

// tagSeverity is each tag's class. A tag not listed here ranks as
// SeverityBroken, so a new tag is never painted as safe by default.
var tagSeverity = map[string]Severity{
	TagRolledBack:     SeverityRedone,
	TagLostClaim:      SeverityRedone,
	TagLostAcked:      SeverityLost,
	TagLostDownstream: SeverityLost,
	TagDuplicate:      SeverityDuplicate,
	TagMissing:        SeverityBroken,
	TagCorrupt:        SeverityBroken,
	TagError:          SeverityBroken,
}

// SeverityOf is the class of an outcome: the worst of its tags. "" (no
// trial) is NotRun.
func SeverityOf(outcome string) Severity {
	switch outcome {
	case "":
		return NotRun
	case OutcomeOK:
		return SeverityNone
	}
	worst := SeverityNone
	for _, t := range strings.Split(outcome, "+") {
		s, ok := tagSeverity[t]
		if !ok {
			s = SeverityBroken
		}
		worst = max(worst, s)
	}
	return worst
}
