package durability

import (
	"testing"

	"idemlab/experiments/receiver"
	wb "idemlab/worker/batch"
)

const ev = "e|k"

// redeliveryRows builds a redelivery file's rows by hand.
func redeliveryRows(jobs, processed int) Rows {
	r := Rows{TableJobs: []string{}, TableProcessed: []string{}}
	for i := 0; i < jobs; i++ {
		r[TableJobs] = append(r[TableJobs], ev)
	}
	for i := 0; i < processed; i++ {
		r[TableProcessed] = append(r[TableProcessed], "e")
	}
	return r
}

// TestClassify classifies hand-made histories, one per tag.
func TestClassify(t *testing.T) {
	accepted := func(item string) receiver.Entry {
		return receiver.Entry{Job: "j", Item: item, Step: wb.StepNotify, Outcome: receiver.SendAccepted}
	}
	done := Rows{TableJournal: []string{"j|item-001|" + wb.StepNotify + "|SUCCEEDED|r"}}
	tests := []struct {
		name     string
		f        Facts
		want     string
		wantLost int
	}{
		{"nothing lost", Facts{Pattern: PatternSingle, FirstExit: 17, Before: redeliveryRows(1, 1), After: redeliveryRows(1, 1), Final: redeliveryRows(1, 1), Integrity: []string{"ok"}, LaterExits: []int{0}}, OutcomeOK, 0},
		{"crashed commit rolled back", Facts{Pattern: PatternSingle, FirstExit: 17, Before: redeliveryRows(1, 1), After: redeliveryRows(0, 0), Final: redeliveryRows(1, 1), Integrity: []string{"ok"}}, TagRolledBack, 2},
		{"ACKed commit lost, redone", Facts{Pattern: PatternSingle, FirstExit: 0, Before: redeliveryRows(1, 1), After: redeliveryRows(0, 0), Final: redeliveryRows(1, 1), Integrity: []string{"ok"}}, TagLostAcked, 2},
		{"ACKed record lost, job twice", Facts{Pattern: PatternSeparate, FirstExit: 0, Before: redeliveryRows(1, 1), After: redeliveryRows(1, 0), Final: redeliveryRows(2, 1), Integrity: []string{"ok"}}, "lost-acked+duplicate", 1},
		{"kill between commits duplicates", Facts{Pattern: PatternSeparate, FirstExit: 17, Before: redeliveryRows(1, 0), After: redeliveryRows(1, 0), Final: redeliveryRows(2, 1), Integrity: []string{"ok"}}, TagDuplicate, 0},
		{"corrupt and failing", Facts{Pattern: PatternSingle, FirstExit: 17, Before: redeliveryRows(1, 1), After: redeliveryRows(1, 1), Final: redeliveryRows(0, 0), Integrity: []string{"*** in database main ***", "page 2 never used"}, LaterExits: []int{3}}, "corrupt+missing+error", 0},
		{"batch send accepted twice", Facts{Pattern: PatternBatch, JobID: "j", Items: 1, FirstExit: 17, Before: done, After: Rows{TableJournal: []string{}}, Final: done, Integrity: []string{"ok"}, Sends: []receiver.Entry{accepted("item-001"), accepted("item-001")}}, "rolled-back+duplicate", 1},
		{"batch item never sent", Facts{Pattern: PatternBatch, JobID: "j", Items: 2, FirstExit: 0, Before: done, After: done, Final: done, Integrity: []string{"ok"}, Sends: []receiver.Entry{accepted("item-001")}}, TagMissing, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := Classify(tt.f)
			if got != tt.want || n != tt.wantLost {
				t.Errorf("Classify = %q, %d rows lost; want %q, %d", got, n, tt.want, tt.wantLost)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	tests := []struct {
		allowed []string
		outcome string
		want    bool
	}{
		{[]string{OutcomeOK}, OutcomeOK, true},
		{[]string{OutcomeOK}, TagRolledBack, false},
		{[]string{OutcomeOK, AnyOutcome}, "corrupt+duplicate", true},
		{[]string{OutcomeOK, AnyOutcome}, "lost-acked+duplicate", true},
		{[]string{TagLostAcked}, "corrupt+lost-acked", false},
	}
	for _, tt := range tests {
		if got := Allows(tt.allowed, tt.outcome); got != tt.want {
			t.Errorf("Allows(%v, %q) = %v, want %v", tt.allowed, tt.outcome, got, tt.want)
		}
	}
}
