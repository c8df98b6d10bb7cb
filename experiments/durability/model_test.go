package durability

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/receiver"
	wb "idemlab/worker/batch"
	wr "idemlab/worker/redelivery"
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

// TestAllowed checks the oracle's sets for the cells the issue names.
func TestAllowed(t *testing.T) {
	power := func(mode, sync string) Setting { return Setting{JournalMode: mode, Synchronous: sync, Kind: KindPower} }
	tests := []struct {
		pattern, point string
		s              Setting
		want           []string
	}{
		{PatternSeparate, wr.PointAfterJobCommit, Setting{JournalMode: "WAL", Synchronous: "OFF", Kind: KindKill}, []string{TagDuplicate}},
		{PatternSeparate, wr.PointAfterJobCommit, power("WAL", "NORMAL"), []string{TagDuplicate, TagRolledBack}},
		{PatternSeparate, PointACK, power("DELETE", "FULL"), []string{OutcomeOK, "lost-acked+duplicate"}},
		{PatternSeparate, PointACK, power("WAL", "NORMAL"), []string{OutcomeOK}},
		{PatternSingle, PointACK, power("DELETE", "EXTRA"), []string{OutcomeOK}},
		{PatternSingle, wr.PointAfterCommit, power("WAL", "OFF"), []string{OutcomeOK, TagRolledBack, AnyCorrupt}},
		{PatternBatch, "after-send-accepted:item-001", power("WAL", "NORMAL"), []string{OutcomeOK, "rolled-back+duplicate"}},
		{PatternBatch, "after-send-accepted:item-001", Setting{JournalMode: "DELETE", Synchronous: "FULL", Kind: KindPower, Exclusive: true}, []string{OutcomeOK}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.s.JournalMode+"/"+tt.s.Synchronous+"/"+tt.s.Kind+"/"+tt.point, func(t *testing.T) {
			got, err := Allowed(tt.pattern, tt.s, 1, tt.point)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Allowed (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Allowed(PatternSingle, power("WAL", "FULL"), 1, "nowhere"); err == nil {
		t.Error("an unknown point was allowed")
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
		{[]string{OutcomeOK, AnyCorrupt}, "corrupt+duplicate", true},
		{[]string{AnyCorrupt}, TagDuplicate, false},
	}
	for _, tt := range tests {
		if got := Allows(tt.allowed, tt.outcome); got != tt.want {
			t.Errorf("Allows(%v, %q) = %v, want %v", tt.allowed, tt.outcome, got, tt.want)
		}
	}
}
