package redelivery

import (
	"encoding/json"
	"path/filepath"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// Extra is the scenario's derived extra table.
type Extra struct {
	// SQLiteReadBack is what the acknowledging workers said their
	// connections read back; the fold checks each against the settings.
	SQLiteReadBack sqlitedb.Settings `json:"sqlite_read_back"`
}

// Fold derives each condition's deliveries from the records alone. The row
// counts are the rows the parent read after each process exited; the exit
// code is the parent's own wait status; the crash point and the points
// passed are the worker's report, which the fold checks against the crash
// point the harness set and the oracle then checks against the model. The
// worker's claims about what it did (job inserted, already processed, the
// pragmas it read back) are checked against the rows before and after.
func (Scenario) Fold(raw json.RawMessage, rec results.Records) (scenario.Folded, []results.Finding) {
	var c results.Checker
	folded := scenario.Folded{Observed: map[string]any{}}
	var st Settings
	if err := scenario.DecodeStrict(raw, &st); err != nil {
		c.Add("results.json", "scenarios[redelivery].settings", "not redelivery settings: %v", err)
		return folded, c.Findings
	}
	conds := map[string]Condition{}
	for _, cond := range st.Conditions {
		conds[cond.Name] = cond
	}
	type state struct {
		db   string
		prev Rows
		out  []Delivery
	}
	per := map[string]*state{}
	dbs := map[string]string{}
	var readBack *sqlitedb.Settings
	for _, l := range rec.Observations {
		var o Observation
		if err := results.DecodeStrict(l.Raw, &o); err != nil {
			c.Obs(l, "", "not a redelivery observation: %v", err)
			continue
		}
		cond, ok := conds[o.Condition]
		if !ok {
			c.Obs(l, "condition", "%q is not a condition in the settings", o.Condition)
			continue
		}
		s := per[o.Condition]
		if s == nil {
			s = &state{db: o.DB, prev: Rows{FollowUpJobs: []wr.Event{}, ProcessedEvents: []string{}}}
			per[o.Condition] = s
			if other, dup := dbs[o.DB]; dup {
				c.Obs(l, "db", "%s is also condition %s's file; every condition starts on a fresh file", o.DB, other)
			}
			dbs[o.DB] = o.Condition
		}
		if o.DB != s.db || filepath.Base(o.DB) != DBName {
			c.Obs(l, "db", "%q, but the condition's deliveries go to one file named %s (%q)", o.DB, DBName, s.db)
		}
		if want := len(s.out) + 1; o.Delivery != want {
			c.Obs(l, "delivery", "is %d, want %d: deliveries are recorded in order from 1", o.Delivery, want)
		}
		checkRows(&c, l, st, o.Rows)
		d := Delivery{Delivery: o.Delivery, FollowUpJobs: len(o.Rows.FollowUpJobs), ProcessedEvents: len(o.Rows.ProcessedEvents), Points: []string{}}
		p, ok := c.Use(rec, l, o.ProcessID)
		if ok {
			c.Argv(p, wr.WorkerName, Args(st, cond, o.DB))
			env := map[string]string{}
			if o.Delivery == 1 && cond.CrashAt != "" {
				env[protocol.EnvCrashAt] = cond.CrashAt
			}
			c.Env(p, env)
			d.ExitCode = p.ExitCode
			if p.Signal != "" || (p.ExitCode != protocol.ExitACK && p.ExitCode != protocol.ExitCrash) {
				c.Proc(p, "exit_code", "delivery %d %s; a delivery ends in 0 (ACK) or 17 (crash)", o.Delivery, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
			}
			if rep, ok := c.Report(p); ok {
				d.CrashedAt, d.Points = rep.CrashedAt, rep.Points
				if p.ExitCode == protocol.ExitACK {
					rb := checkClaim(&c, p, rep, st, cond, s.prev, o.Rows)
					if rb != nil && readBack == nil {
						readBack = rb
					}
				}
			}
		}
		s.out = append(s.out, d)
		s.prev = o.Rows
	}
	for name, s := range per {
		if len(s.out) != st.Deliveries {
			c.AddTo(name, "observations.jsonl", "condition "+name, "%d deliveries recorded, the settings give %d", len(s.out), st.Deliveries)
		}
		folded.Observed[name] = s.out
	}
	c.Unused(rec, 1)
	if readBack != nil {
		folded.Extra = Extra{SQLiteReadBack: *readBack}
	}
	return folded, c.Findings
}

// checkRows checks the rows' contents against the settings: a job or a
// processed record can only be the delivered event's.
func checkRows(c *results.Checker, l results.Line, st Settings, r Rows) {
	for i, j := range r.FollowUpJobs {
		if j.ID != st.EventID || j.JobKey != st.JobKey {
			c.Obs(l, results.Field("rows", "follow_up_jobs", i), "is %s/%s, but the only event delivered is %s/%s", j.ID, j.JobKey, st.EventID, st.JobKey)
		}
	}
	for i, id := range r.ProcessedEvents {
		if id != st.EventID {
			c.Obs(l, results.Field("rows", "processed_events", i), "is %q, but the only event delivered is %q", id, st.EventID)
		}
	}
	if r.FollowUpJobs == nil {
		c.Obs(l, "rows.follow_up_jobs", "is null: the file had no such table after this delivery")
	}
	if r.ProcessedEvents == nil {
		c.Obs(l, "rows.processed_events", "is null: the file had no such table after this delivery")
	}
}

// checkClaim cross-checks an acknowledging worker's report with the rows
// the parent read before and after it, and returns the pragmas it claims.
func checkClaim(c *results.Checker, p results.Process, rep protocol.Report, st Settings, cond Condition, before, after Rows) *sqlitedb.Settings {
	var r wr.Result
	if err := results.DecodeStrict(rep.Result, &r); err != nil {
		c.Proc(p, "stdout", "the report's result is not a delivery result: %v", err)
		return nil
	}
	if r.Pattern != cond.Pattern {
		c.Proc(p, "stdout", "the worker says it ran %s, the condition is %s", r.Pattern, cond.Pattern)
	}
	if r.Settings != st.SQLite {
		c.Proc(p, "stdout", "the worker read back %s, the settings require %s", results.Compact(r.Settings), results.Compact(st.SQLite))
	}
	added := len(after.FollowUpJobs) - len(before.FollowUpJobs)
	if r.Outcome.JobInserted != (added == 1) || added < 0 || added > 1 {
		c.Proc(p, "stdout", "%s reported job_inserted=%v, but follow_up_jobs went %d → %d", p.Label, r.Outcome.JobInserted, len(before.FollowUpJobs), len(after.FollowUpJobs))
	}
	if r.Outcome.AlreadyProcessed != (len(before.ProcessedEvents) > 0) {
		c.Proc(p, "stdout", "%s reported already_processed=%v, but processed_events held %d rows before it", p.Label, r.Outcome.AlreadyProcessed, len(before.ProcessedEvents))
	}
	return &r.Settings
}
