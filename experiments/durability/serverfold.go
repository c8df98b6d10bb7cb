package durability

import (
	"maps"
	"reflect"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// checkServer checks a PostgreSQL trial's record where a SQLite trial's
// has its cut: no VFS op log; a server crash record exactly for the
// server kind, with the writers frozen, the crash settings read back as
// the settings apply them, and the lost rows the parent recorded equal to
// what its own reads before and after the crash differ by. The outcome
// itself is derived from those reads, not from the recorded list.
func (f *folder) checkServer(t trialLine) {
	if t.o.Log != nil {
		f.c.Obs(t.l, "log", "present, but a PostgreSQL trial has no VFS op log")
	}
	crash := t.cond.Kind == KindServer
	if (t.o.Server != nil) != crash {
		f.c.Obs(t.l, "server", "present=%v, but a server crash record comes with the server kind and only then (kind %s)", t.o.Server != nil, t.cond.Kind)
	}
	sc := t.o.Server
	if sc == nil {
		return
	}
	if !sc.Frozen {
		f.c.Obs(t.l, "server.writers_frozen", "false, but the server's writers are frozen before every server crash, so that what is lost does not depend on their timing")
	}
	if !maps.Equal(sc.Settings, f.st.ServerSettings) {
		f.c.Obs(t.l, "server.settings", "the recovered server read back %s, the settings apply %s", results.Compact(sc.Settings), results.Compact(f.st.ServerSettings))
	}
	if want := LostRows(t.o.Before, t.o.After); !reflect.DeepEqual(sc.Lost, want) {
		f.c.Obs(t.l, "server.lost_rows", "are %v, but the rows read before and after the crash differ by %v", sc.Lost.Lines(), want.Lines())
	}
}

// checkServerReadBack checks that the normal run's session read back the
// run's isolation level and the condition's synchronous_commit.
func (f *folder) checkServerReadBack(t trialLine, p results.Process, rep protocol.Report) {
	var got *store.PGSettings
	var err error
	what := "a delivery result"
	switch t.cond.Pattern {
	case PatternBatch:
		var r wb.RunResult
		err, got, what = results.DecodeStrict(rep.Result, &r), r.Postgres, "a batch run result"
	case PatternClaim:
		var r we.ClaimResult
		err, got, what = results.DecodeStrict(rep.Result, &r), r.Postgres, "a claim result"
	default:
		var r wr.Result
		err, got = results.DecodeStrict(rep.Result, &r), r.Postgres
	}
	if err != nil {
		f.c.Proc(p, "stdout", "the report's result is not %s: %v", what, err)
		return
	}
	want := f.st.Requested(t.cond)
	if d := backend.CheckReadBack(&want, got); d != "" {
		f.c.Proc(p, "stdout", "%s", d)
	}
}

// checkDeliveryClaim checks what an acknowledging redelivery says it did
// against the rows the parent read around it: the first process from the
// fresh tables to the rows before the crash, the redelivery from the rows
// after the crash to the final ones.
func (f *folder) checkDeliveryClaim(t trialLine, i int, p results.Process, rep protocol.Report) {
	if p.ExitCode != protocol.ExitACK || i > 1 || t.cond.Pattern != PatternSeparate && t.cond.Pattern != PatternSingle {
		return
	}
	var r wr.Result
	if err := results.DecodeStrict(rep.Result, &r); err != nil {
		f.c.Proc(p, "stdout", "the report's result is not a delivery result: %v", err)
		return
	}
	before, after := Rows{}, t.o.Before
	if i == 1 {
		before, after = t.o.After, t.o.Final
	}
	added := len(after[TableJobs]) - len(before[TableJobs])
	if r.Outcome.JobInserted != (added == 1) {
		f.c.Proc(p, "stdout", "%s reported job_inserted=%v, but follow_up_jobs went %d → %d", p.Label, r.Outcome.JobInserted, len(before[TableJobs]), len(after[TableJobs]))
	}
	if r.Outcome.AlreadyProcessed != (len(before[TableProcessed]) > 0) {
		f.c.Proc(p, "stdout", "%s reported already_processed=%v, but processed_events held %d rows before it", p.Label, r.Outcome.AlreadyProcessed, len(before[TableProcessed]))
	}
}
