package durability

import (
	"testing"

	"idemlab/experiments/scenariotest"
)

// TestProcessesMatchARun: the progress total is the plan's count. Where
// the file keeps every commit (WAL with FULL), a real run of all four
// patterns starts exactly that many processes.
func TestProcessesMatchARun(t *testing.T) {
	ov := map[string]string{FlagPattern: PatternSeparate + "," + PatternSingle + "," + PatternBatch + "," + PatternClaim,
		FlagJournalMode: "WAL", FlagSynchronous: "FULL", FlagKind: KindPower, FlagItems: "1"}
	scenariotest.CheckProcesses(t, New(), "", ov)
}

// TestProcessesBoundALossyRun: with synchronous=OFF a cut may take back a
// notify's IN_FLIGHT (no resolve) or its SUCCEEDED after an ACK (one more
// resolve), so the plan counts the most a trial may start, and a real run
// starts no more.
func TestProcessesBoundALossyRun(t *testing.T) {
	ov := map[string]string{FlagPattern: PatternBatch, FlagJournalMode: "WAL", FlagSynchronous: "OFF", FlagKind: KindPower, FlagItems: "2"}
	want := scenariotest.Planned(t, New(), "", ov)
	out := scenariotest.Run(t, New(), "", ov)
	if got := len(out.Records.Processes); got > want || got == 0 {
		t.Errorf("the run recorded %d processes; its plan counts at most %d", got, want)
	}
}
