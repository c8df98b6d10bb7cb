package durability

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// checkShape checks what a trial's line must hold for its kind and
// pattern: the steps in order, a recovery report exactly for a power cut,
// the tables read, and the receiver's log only for batch.
func (f *folder) checkShape(t trialLine) {
	f.checkSteps(t)
	o, cond := t.o, t.cond
	if (o.Recovery != nil) != (cond.Kind == KindPower && !cond.OnServer() && !f.st.OnFS(cond)) {
		f.c.Obs(t.l, "recovery", "present=%v, but a recovery report comes with a power cut through the VFS and only then (kind %s)", o.Recovery != nil, cond.Kind)
	}
	f.checkFS(t)
	f.checkPGPower(t)
	if o.Recovery != nil {
		f.checkRecovery(t)
	}
	tables := Tables(cond.Pattern)
	if cond.Pattern == PatternBatch {
		if o.Receiver == "" {
			f.c.Obs(t.l, "receiver", "empty, but a batch trial has a receiver")
		}
	} else if o.Receiver != "" || o.Sends != nil {
		f.c.Obs(t.l, "receiver", "only a batch trial has a receiver")
	}
	if cond.Pattern == PatternClaim {
		f.claimShape(t)
	}
	for _, name := range []string{"before", "after", "final"} {
		r := map[string]Rows{"before": o.Before, "after": o.After, "final": o.Final}[name]
		if name == "before" && f.st.pgFrozen(cond, o.Point) {
			// The server waits in the frozen fsync: nothing is read.
			if len(r) != 0 {
				f.c.Obs(t.l, name, "has %d tables, but the parent reads nothing before a cut at the mount's fsync on PostgreSQL", len(r))
			}
			continue
		}
		for _, tb := range tables {
			if r[tb] == nil {
				f.c.Obs(t.l, name, "table %s is missing; every table is listed, empty or not", tb)
			}
		}
		if len(r) != len(tables) {
			f.c.Obs(t.l, name, "has %d tables, the pattern has %d", len(r), len(tables))
		}
	}
	for i, row := range o.Final[TableJobs] {
		if row != f.st.EventID+"|"+f.st.JobKey {
			f.c.Obs(t.l, results.Field("final", TableJobs, i), "is %q, but the only event delivered is %s|%s", row, f.st.EventID, f.st.JobKey)
		}
	}
	if len(o.Integrity) == 0 {
		f.c.Obs(t.l, "integrity", "empty; integrity_check always answers")
	}
}

// checkSends checks that a batch trial whose later workers all succeeded
// ends with a send logged: they send every item at least once. A cut that
// leaves the journal unreadable makes them fail before any send, and one
// after which the server never starts runs none of them: "all succeeded"
// needs at least one.
func (f *folder) checkSends(t trialLine, facts Facts) {
	if t.cond.Pattern != PatternBatch || len(t.o.Sends) > 0 || len(facts.LaterExits) == 0 || slices.ContainsFunc(facts.LaterExits, func(c int) bool { return c != protocol.ExitACK }) {
		return
	}
	f.c.Obs(t.l, "sends", "empty, but the later workers all succeeded, and they send every item at least once")
}

// checkSteps checks the roles of a trial's processes, in order, and that
// only a resolve carries a lookup, one the receiver's log bears out.
func (f *folder) checkSteps(t trialLine) {
	roles := make([]string, len(t.o.Steps))
	for i, s := range t.o.Steps {
		roles[i] = s.Role
		if (s.Role == RoleResolve) != (s.Lookup != nil) {
			f.c.Obs(t.l, results.Field("steps", i), "a resolve carries the receiver lookup, and only a resolve")
		}
		if s.Lookup != nil && s.Lookup.Found {
			if !slices.ContainsFunc(t.o.Sends, func(e receiver.Entry) bool {
				return e.Accepted() && e.Job+":"+e.Item+":"+e.Step == s.Lookup.Key && e.Receipt == s.Lookup.Receipt
			}) {
				f.c.Obs(t.l, results.Field("steps", i, "lookup"), "found receipt %q for %s, but the receiver's log has no such accepted send", s.Lookup.Receipt, s.Lookup.Key)
			}
		}
	}
	want := "first second"
	if t.cond.Pattern == PatternClaim {
		want = strings.Join([]string{RoleFirst, RoleProbe, RoleReclaim}, " ")
	}
	got := strings.Join(roles, " ")
	if t.o.PGPower != nil && !t.o.PGPower.Started {
		// No server to go on with: the first process alone.
		if got != RoleFirst {
			f.c.Obs(t.l, "steps", "roles %q, want %q: the server did not start after the cut", got, RoleFirst)
		}
	} else if t.cond.Pattern == PatternBatch {
		inner := strings.TrimSuffix(strings.TrimPrefix(got, "first second"), " third")
		if !strings.HasPrefix(got, "first second") || !strings.HasSuffix(got, " third") || strings.Trim(strings.ReplaceAll(inner, " resolve", ""), " ") != "" {
			f.c.Obs(t.l, "steps", "roles %q, want first, second, any resolves, third", got)
		}
	} else if got != want {
		f.c.Obs(t.l, "steps", "roles %q, want %q", got, want)
	}
}

// checkRecovery checks faultvfs's report for what its rules allow: a
// removed file has no size after, the index file never survives.
func (f *folder) checkRecovery(t trialLine) {
	for i, fr := range t.o.Recovery.Files {
		switch fr.Action {
		case faultvfs.ActRemove:
			if fr.After != -1 {
				f.c.Obs(t.l, results.Field("recovery", "files", i), "removed, but %d bytes after", fr.After)
			}
		case faultvfs.ActRestore, faultvfs.ActResurrect:
			if strings.HasSuffix(fr.Name, "-shm") {
				f.c.Obs(t.l, results.Field("recovery", "files", i), "the WAL index %s is never durable, yet %s", fr.Name, fr.Action)
			}
		default:
			f.c.Obs(t.l, results.Field("recovery", "files", i), "action %q is not one of faultvfs's", fr.Action)
		}
	}
}

// checkReadBack checks that the normal run's worker opened its file with
// the condition's settings through the fault VFS.
func (f *folder) checkReadBack(t trialLine, p results.Process, rep protocol.Report) {
	cond := t.cond
	if cond.OnServer() {
		f.checkServerReadBack(t, p, rep)
		return
	}
	want := sqlitedb.Settings{JournalMode: cond.JournalMode, Synchronous: cond.Synchronous, BusyTimeoutMS: busyTimeoutMS, VFS: faultvfs.Name}
	var got sqlitedb.Settings
	switch cond.Pattern {
	case PatternClaim:
		var r we.ClaimResult
		if err := results.DecodeStrict(rep.Result, &r); err != nil {
			f.c.Proc(p, "stdout", "the report's result is not a claim result: %v", err)
			return
		}
		got = r.Settings
	case PatternBatch:
		var r wb.RunResult
		if err := results.DecodeStrict(rep.Result, &r); err != nil || r.SQLite == nil {
			f.c.Proc(p, "stdout", "the report's result is not a batch run result with its settings: %v", err)
			return
		}
		got, want.LockingMode = *r.SQLite, wb.Options("").LockingMode
	default:
		var r wr.Result
		if err := results.DecodeStrict(rep.Result, &r); err != nil {
			f.c.Proc(p, "stdout", "the report's result is not a delivery result: %v", err)
			return
		}
		got = r.Settings
	}
	if got != want {
		f.c.Proc(p, "stdout", "the worker read back %s, the condition requires %s", results.Compact(got), results.Compact(want))
	}
}

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

// checkPGPower checks a PostgreSQL power trial's record: present exactly
// for a power cut on PostgreSQL; its settings, its quiet settings and what
// the recovered server read back are the condition's; the cut's models
// are the condition's, and the rest as every fold of one checks
// (backend.FoldPower).
func (f *folder) checkPGPower(t trialLine) {
	on := t.cond.pgPower()
	if (t.o.PGPower != nil) != on {
		f.c.Obs(t.l, "pg_power", "present=%v, but a PostgreSQL power record comes with a power cut on PostgreSQL and only then (kind %s)", t.o.PGPower != nil, t.cond.Kind)
		return
	}
	if !on {
		return
	}
	backend.FoldPower(&f.c, f.rec, t.l, *t.o.PGPower, f.st.powerSettings(t.cond), f.st.pgParams(t.cond), f.st.PowerQuiet)
}

// checkPGSync checks a PostgreSQL power trial's sweep fields
// (backend.CheckSweepRecord).
func (f *folder) checkPGSync(t trialLine) {
	sweeps := f.st.pgSweeps(t.cond)
	var cut *protocol.SyncCut
	if c, ok := ParseSyncPoint(t.o.Point); ok && sweeps {
		cut = &c
	}
	if field, text := backend.CheckSweepRecord(t.o.SyncWindow, t.o.Point == PointACK && sweeps, t.o.PGPower, f.st.powerSettings(t.cond), cut); field != "" {
		f.c.Obs(t.l, field, "%s", text)
	}
}

// checkFSSyncCut checks a cut at the mount's sync against its record
// (powerlayer.CheckSyncCut); checkFS checks the rest.
func (f *folder) checkFSSyncCut(t trialLine, cut protocol.SyncCut) {
	if t.o.FS == nil {
		return // checkFS names it
	}
	if field, text := powerlayer.CheckSyncCut(t.o.FS.Record, cut); field != "" {
		f.c.Obs(t.l, "fs."+field, "%s", text)
	}
}

// checkFS checks a trial's fs record: present exactly for a power cut on
// the fs layer, and then as every fold of such a cut does
// (powerlayer.MountCut.Fold).
func (f *folder) checkFS(t trialLine) {
	on := f.st.OnFS(t.cond)
	if (t.o.FS != nil) != on {
		f.c.Obs(t.l, "fs", "present=%v, but an fs record comes with a power cut on the fs layer and only then (power layer %q, kind %s)", t.o.FS != nil, f.st.PowerLayer, t.cond.Kind)
		return
	}
	if on {
		t.o.FS.Fold(&f.c, f.rec, t.l, "fs", f.st.fsParams(seedOf(t.o)))
	}
}
