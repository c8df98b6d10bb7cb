package redelivery

import (
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Extra is the scenario's derived extra table.
type Extra struct {
	// SQLiteReadBack is what the acknowledging workers said their
	// connections read back; the fold checks each against the settings.
	SQLiteReadBack sqlitedb.Settings `json:"sqlite_read_back,omitzero"`
	// PostgresReadBack is the same on PostgreSQL: the server's version and
	// the settings its sessions ran with.
	PostgresReadBack *store.PGSettings `json:"postgres_read_back,omitempty"`
}

// folder is one fold's state across the observation lines.
type folder struct {
	c     results.Checker
	st    Settings
	rec   results.Records
	conds map[string]Condition
	// per is each condition's deliveries so far; dbs the condition each
	// file belongs to.
	per      map[string]*condState
	dbs      engine.Places
	readBack *Extra
	// ends is each condition's last delivery's end, with --broker.
	ends map[string]time.Time
	// pubs are each republish condition's publishers so far.
	pubs map[string][]PublisherFacts
}

// condState is one condition's deliveries so far and the rows the last
// one left.
type condState struct {
	db   string
	prev wr.State
	out  []Delivery
	// pair is delivery 1's of a condition whose two deliveries run side
	// by side: the rows before both, and the jobs it says it inserted.
	pair *pairRows
}

// pairRows are what the jobs check of two deliveries run side by side
// needs from the first: the parent reads the rows once, after both.
type pairRows struct {
	before   wr.State
	inserted int
}

// line is one observation line as the fold reads it: the line, what it
// says, its condition and that condition's deliveries before it.
type line struct {
	l    results.Line
	o    Observation
	cond Condition
	s    *condState
}

// Fold derives each condition's deliveries from the records alone. The row
// counts are the rows the parent read after each process exited; the exit
// code is the parent's own wait status; the crash point and the points
// passed are the worker's report, which the fold checks against the crash
// point the harness set and the oracle then checks against the model. The
// worker's claims about what it did (job inserted, already processed, the
// pragmas it read back) are checked against the rows before and after.
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{st: st, rec: rec, conds: map[string]Condition{}, per: map[string]*condState{}, dbs: engine.Places{}, ends: map[string]time.Time{}, pubs: map[string][]PublisherFacts{}}
	for _, cond := range st.Conditions {
		f.conds[cond.Name] = cond
	}
	engine.Each(&f.c, rec, "a redelivery observation", f.conds, func(l results.Line, o Observation, cond Condition) {
		if ln, ok := f.read(line{l: l, o: o, cond: cond}); ok {
			f.deliver(ln)
		}
	})
	folded := scenario.Folded{Observed: map[string]any{}}
	for name, s := range f.per {
		if len(s.out) != st.Deliveries {
			f.c.AddTo(name, results.ObservationsFile, "condition "+name, "%d deliveries recorded, the settings give %d", len(s.out), st.Deliveries)
		}
		folded.Observed[name] = s.out
	}
	f.c.Unused(rec, 1)
	if f.readBack != nil {
		folded.Extra = *f.readBack
	}
	return folded, f.c.Findings
}

// read places a line of a known condition in it; a publisher's line is
// folded apart, and is no delivery.
func (f *folder) read(ln line) (line, bool) {
	if ln.o.Publisher != 0 {
		f.publisher(ln)
		return ln, false
	}
	ln.s = f.per[ln.o.Condition]
	if ln.s == nil {
		ln.s = &condState{db: ln.o.DB, prev: wr.State{FollowUpJobs: []wr.Event{}, ProcessedEvents: []string{}}}
		f.per[ln.o.Condition] = ln.s
		if other, dup := f.dbs.Take(ln.l.Shard, ln.o.DB, ln.o.Condition); dup {
			f.c.Obs(ln.l, "db", "%s is also condition %s's file; every condition starts on a fresh file", ln.o.DB, other)
		}
	}
	return ln, true
}

// deliver checks one delivery and adds it to its condition.
func (f *folder) deliver(ln line) {
	o := ln.o
	if o.DB != ln.s.db || !backend.IsTarget(f.st.backendName(), o.DB, DBName) {
		f.c.Obs(ln.l, "db", "%q, but the condition's deliveries go to one %s (%q)", o.DB, backend.TargetKind(f.st.backendName(), DBName), ln.s.db)
	}
	if want := len(ln.s.out) + 1; o.Delivery != want {
		f.c.Obs(ln.l, "delivery", "is %d, want %d: deliveries are recorded in order from 1", o.Delivery, want)
	}
	d := Delivery{Delivery: o.Delivery, FollowUpJobs: len(o.Rows.FollowUpJobs), ProcessedEvents: len(o.Rows.ProcessedEvents), Points: []string{}}
	// The process comes first: how a worker ended is the cause a reader
	// wants first, and the rows it left follow from it.
	if p, ok := f.c.Use(f.rec, ln.l, o.ProcessID); ok {
		f.process(ln, p, &d)
	}
	f.checkRows(ln)
	ln.s.out = append(ln.s.out, d)
	ln.s.prev = o.Rows
	f.serverCrash(ln, &ln.s.out[len(ln.s.out)-1])
}

// serverCrash takes the rows the parent read after the server's crash, on
// the delivery of a server-crash condition that has them; the next
// delivery starts from them. The settings the recovered server read back
// must be the ones the run set.
func (f *folder) serverCrash(ln line, d *Delivery) {
	o, want := ln.o, ln.cond.ServerCrash && ln.o.Delivery == 1
	switch {
	case o.AfterServerCrash == nil && !want:
		return
	case o.AfterServerCrash == nil:
		f.c.Obs(ln.l, "after_server_crash", "missing: delivery 1 of a server-crash condition records the rows read after the crash")
		return
	case !want:
		f.c.Obs(ln.l, "after_server_crash", "recorded, but only delivery 1 of a server-crash condition crashes the server")
		return
	}
	for k, v := range f.st.ServerSettings {
		if got := o.ServerSettings[k]; got != v {
			f.c.Obs(ln.l, results.Field("server_settings", k), "the recovered server read back %q, the run set %q", got, v)
		}
	}
	d.AfterServerCrash = &CrashRows{FollowUpJobs: len(o.AfterServerCrash.FollowUpJobs), ProcessedEvents: len(o.AfterServerCrash.ProcessedEvents)}
	ln.s.prev = *o.AfterServerCrash
}

// process checks the delivery's process line: its command line and
// environment, its exit, and its report, which gives the delivery's crash
// point and points.
func (f *folder) process(ln line, p results.Process, d *Delivery) {
	if f.st.Broker != nil && ln.o.Broker != nil {
		f.c.Argv(p, wr.ConsumerName, f.st.consumeArgs(ln.cond, ln.o.Delivery, ln.o.DB, ln.o.Broker.URL).Argv())
	} else {
		f.c.Argv(p, wr.WorkerName, f.st.Args(ln.cond, ln.o.DB).Argv())
	}
	env := map[string]string{}
	if ln.o.Delivery == 1 && ln.cond.CrashAt != "" {
		env[protocol.EnvCrashAt] = ln.cond.CrashAt
	}
	f.c.Env(p, env)
	d.ExitCode = p.ExitCode
	if p.Signal != "" || (p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitCrash) {
		f.c.Proc(p, "exit_code", "delivery %d %s; a delivery ends in 0 (ACK) or 17 (crash)", ln.o.Delivery, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
	rep, ok := f.c.Report(p)
	if !ok {
		return
	}
	d.CrashedAt, d.Points = rep.CrashedAt, rep.Points
	if p.ExitCode != protocol.ExitACK {
		f.foldBroker(ln, &p, nil, d)
		return
	}
	rb, r := f.checkClaim(ln, p, rep)
	if rb != nil && f.readBack == nil {
		f.readBack = rb
	}
	f.foldBroker(ln, &p, r, d)
}

// checkRows checks the rows' contents against the settings: a job or a
// processed record can only be the delivered event's.
func (f *folder) checkRows(ln line) {
	r := ln.o.Rows
	for i, j := range r.FollowUpJobs {
		if j.ID != f.st.EventID || j.JobKey != f.st.JobKey {
			f.c.Obs(ln.l, results.Field("rows", "follow_up_jobs", i), "is %s/%s, but the only event delivered is %s/%s", j.ID, j.JobKey, f.st.EventID, f.st.JobKey)
		}
	}
	for i, id := range r.ProcessedEvents {
		if id != f.st.EventID {
			f.c.Obs(ln.l, results.Field("rows", "processed_events", i), "is %q, but the only event delivered is %q", id, f.st.EventID)
		}
	}
	if r.FollowUpJobs == nil {
		f.c.Obs(ln.l, "rows.follow_up_jobs", "after delivery %d the file has no %s table (null in the record)", ln.o.Delivery, wr.TableJobs)
	}
	if r.ProcessedEvents == nil {
		f.c.Obs(ln.l, "rows.processed_events", "after delivery %d the file has no %s table (null in the record)", ln.o.Delivery, wr.TableProcessed)
	}
}

// checkClaim cross-checks an acknowledging worker's report with the rows
// the parent read before and after it, and returns the settings it says
// its connection read back.
func (f *folder) checkClaim(ln line, p results.Process, rep protocol.Report) (*Extra, *wr.Result) {
	var r wr.Result
	if err := results.DecodeStrict(rep.Result, &r); err != nil {
		f.c.Proc(p, "stdout", "the report's result is not a delivery result: %v", err)
		return nil, nil
	}
	before, after := ln.s.prev, ln.o.Rows
	if r.Broker != nil && !r.Broker.Fetched {
		if len(after.FollowUpJobs) != len(before.FollowUpJobs) || len(after.ProcessedEvents) != len(before.ProcessedEvents) {
			f.c.Proc(p, "stdout", "%s fetched no message, but the rows went %d/%d → %d/%d", p.Label, len(before.FollowUpJobs), len(before.ProcessedEvents), len(after.FollowUpJobs), len(after.ProcessedEvents))
		}
		return nil, &r
	}
	if r.Pattern != ln.cond.Pattern {
		f.c.Proc(p, "stdout", "the worker says it ran %s, the condition is %s", r.Pattern, ln.cond.Pattern)
	}
	if r.Settings != f.st.SQLite {
		f.c.Proc(p, "stdout", "the worker read back %s, the settings require %s", results.Compact(r.Settings), results.Compact(f.st.SQLite))
	}
	if msg := backend.CheckReadBack(f.st.Postgres, r.Postgres); msg != "" {
		f.c.Proc(p, "stdout", "%s", msg)
	}
	f.checkJobs(ln, p, r.Outcome.JobInserted)
	if r.Outcome.AlreadyProcessed != (len(before.ProcessedEvents) > 0) {
		f.c.Proc(p, "stdout", "%s reported already_processed=%v, but processed_events held %d rows before it", p.Label, r.Outcome.AlreadyProcessed, len(before.ProcessedEvents))
	}
	return &Extra{SQLiteReadBack: r.Settings, PostgresReadBack: r.Postgres}, &r
}

// checkJobs checks the job a delivery says it inserted against the rows
// the parent read before and after it. Two deliveries run side by side
// are checked together, on the second: the parent read the rows once,
// after both, so together they inserted what the table gained.
func (f *folder) checkJobs(ln line, p results.Process, inserted bool) {
	before, after := ln.s.prev, ln.o.Rows
	n := 0
	if inserted {
		n = 1
	}
	if besides(ln.cond.BrokerFault) {
		if ln.o.Delivery == 1 {
			ln.s.pair = &pairRows{before: before, inserted: n}
			return
		}
		if pr := ln.s.pair; pr != nil {
			if n += pr.inserted; len(after.FollowUpJobs)-len(pr.before.FollowUpJobs) != n {
				f.c.Proc(p, "stdout", "deliveries 1 and 2 side by side reported %d jobs inserted, but follow_up_jobs went %d → %d", n, len(pr.before.FollowUpJobs), len(after.FollowUpJobs))
			}
			return
		}
	}
	if len(after.FollowUpJobs)-len(before.FollowUpJobs) != n {
		f.c.Proc(p, "stdout", "%s reported job_inserted=%v, but follow_up_jobs went %d → %d", p.Label, inserted, len(before.FollowUpJobs), len(after.FollowUpJobs))
	}
}
