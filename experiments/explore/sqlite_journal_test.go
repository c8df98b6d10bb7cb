package explore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/receiver"
	"idemlab/experiments/subject"
	"idemlab/experiments/subject/builtin"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
)

// TestSQLiteJournalRaces races K runs of the journal on one SQLite file
// behind the barrier, with the racer explore runs on PostgreSQL: SQLite's
// side of the comparison. The journal's EXCLUSIVE locking mode keeps a
// file to one connection, so the model says at most one run gets to
// write: every other run fails with SQLITE_BUSY at its first mark, before
// any send, and no item is accepted twice; when one run completes, every
// item is accepted once.
func TestSQLiteJournalRaces(t *testing.T) {
	env := harnesstest.New(t)
	st := Settings{JobKey: "job-1", Items: 5}
	for _, k := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			// The losers wait out the 5 s busy timeout; the Ks wait at once.
			t.Parallel()
			for round := range 2 {
				sqliteJournalRound(t, env.Runner, st, k, round)
			}
		})
	}
}

// sqliteJournalRound runs one round of k journal runs on a fresh file and
// judges it by the model of TestSQLiteJournalRaces.
func sqliteJournalRound(t *testing.T, r *harness.Runner, st Settings, k, round int) {
	t.Helper()
	rcv, err := receiver.Start(receiver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	f := Files{DB: filepath.Join(t.TempDir(), DBName), Receiver: rcv.URL}
	j, err := wb.OpenJournal(context.Background(), f.DB, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	racers := make([]harness.Racer, k)
	for i := range racers {
		racers[i] = harness.Racer{Spec: harness.Spec{Scenario: Name, Condition: "sqlite-journal", Label: fmt.Sprintf("K %d round %d racer %d", k, round, i),
			Worker: wb.WorkerRun, Args: builtin.Batch(wb.ModeJournal).RacerArgs(st.params(), f), Exits: []int{protocol.ExitACK, protocol.ExitWorkerError}}}
	}
	procs, err := harness.RunBarrier(context.Background(), r, racers)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := rcv.LogSince(0)
	rows := State{builtin.TableSends: {}}
	for _, e := range log {
		rows[builtin.TableSends] = append(rows[builtin.TableSends], subject.SendRow(e))
	}
	completed, busy := 0, 0
	for _, p := range procs {
		switch {
		case p.Record.ExitCode == protocol.ExitACK:
			completed++
		case p.Record.ExitCode == protocol.ExitWorkerError && strings.Contains(p.Report.Error, "IN_FLIGHT: database is locked") && len(p.Report.Points) == 0:
			busy++
		default:
			t.Errorf("K=%d round %d: a run ended %d: %s", k, round, p.Record.ExitCode, p.Report.Error)
		}
	}
	out := builtin.Batch(wb.ModeJournal).Classify(st.params(), rows)
	if completed > 1 || (completed == 1 && out != OutcomeClean) || (completed == 0 && len(rows[builtin.TableSends]) > 0) {
		t.Errorf("K=%d round %d: %d runs completed, %d failed busy, outcome %s: more than one run wrote, or a send was repeated", k, round, completed, busy, out)
	}
	t.Logf("K=%d round %d: %d completed, %d failed with SQLITE_BUSY at their first mark; %d sends; %s", k, round, completed, busy, len(rows[builtin.TableSends]), out)
}
