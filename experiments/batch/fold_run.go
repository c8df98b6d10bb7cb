package batch

import (
	"sort"
	"strconv"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
	"idemlab/worker/wire"
)

// witnessed is what the parent saw of one run by itself: the sends in its
// window, the journal rows it changed per step, and the unfinished sends
// it marked SUCCEEDED without sending, which only verification does.
type witnessed struct {
	sent     int
	written  map[string]int
	verified int
}

// runLine folds a run: what the parent witnessed, the command line and
// exit, then the worker's report, cross-checked against the witness.
func (f *folder) runLine(ln *line) {
	tf, a, p := ln.tf, ln.a, ln.p
	r := RunObs{Run: len(tf.runs) + 1, JobID: a.Job, Mode: a.Mode}
	if ln.o.Lookup != nil {
		f.c.Obs(ln.l, "lookup", "present on a run; only a resolve follows a lookup")
	}
	saw := f.witness(ln)
	if !ln.pok {
		tf.runs = append(tf.runs, r)
		return
	}
	url := ln.o.Receiver
	if ln.o.Sender != "" {
		url = wire.SenderURL(url, ln.o.Sender)
	}
	f.c.Argv(p, wb.WorkerRun, runArgs(f.st, a, ln.o.DB, url).Argv())
	env := map[string]string{}
	if a.CrashPoint != "" {
		env[protocol.EnvCrashAt] = a.CrashPoint
	}
	f.c.Env(p, env)
	r.ExitCode = p.ExitCode
	rt := RunTiming{Run: r.Run, ProcessMS: p.DurationMS}
	switch p.ExitCode {
	case protocol.ExitACK, protocol.ExitCrash, protocol.ExitStepFailed:
	default:
		f.c.Proc(p, "exit_code", "%s %s; a run ends in 0, 17 (crash) or 18 (step failed)", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
	rep, ok := f.c.Report(p)
	if p.ExitCode == protocol.ExitCrash {
		r.Status, r.CrashedAt = StatusCrashed, rep.CrashedAt
		if ok {
			f.checkPoints(p, rep.Points, ln.sent, rep.CrashedAt)
		}
		exec := map[string]int{wb.StepNotify: saw.sent, wb.StepValidate: saw.written[wb.StepValidate], wb.StepTransform: saw.written[wb.StepTransform]}
		rt.FloorMS = floorOf(f.st.LatencyMS, exec)
		tf.timings = append(tf.timings, rt)
		tf.runs = append(tf.runs, r)
		tf.lastHeld = nil
		return
	}
	var rr wb.RunResult
	if ok {
		if err := results.DecodeStrict(rep.Result, &rr); err != nil {
			f.c.Proc(p, "stdout", "the report's result is not a run result: %v", err)
			ok = false
		}
	}
	if !ok {
		tf.runs = append(tf.runs, r)
		return
	}
	f.checkPoints(p, rep.Points, ln.sent, "")
	f.finishedRun(ln, rr, saw, r, rt)
}

// witness checks the run's sends against its command line and counts what
// the parent saw it do.
func (f *folder) witness(ln *line) witnessed {
	a := ln.a
	saw := witnessed{sent: len(ln.sent), written: map[string]int{}}
	sentKeys := map[wire.Key]bool{}
	for _, e := range ln.sent {
		k := wire.Key{Job: e.Job, Item: e.Item, Step: e.Step}
		sentKeys[k] = true
		if e.Job != a.Job {
			f.c.Obs(ln.l, "sends", "a send of job %q during a run of job %q", e.Job, a.Job)
		}
		if (e.IdempotencyKey != "") != a.IdempotencyKey || (e.IdempotencyKey != "" && e.IdempotencyKey != k.String()) {
			f.c.Obs(ln.l, "sends", "idempotency key %q, but this run sends %s", e.IdempotencyKey, map[bool]string{true: "job:item:step keys", false: "no key"}[a.IdempotencyKey])
		}
	}
	if !ln.cf.journal || a.Mode != wb.ModeJournal {
		return saw
	}
	prev := byKey(ln.before)
	for _, x := range ln.o.Journal {
		old, had := prev[x.Key()]
		if had && old == x {
			continue
		}
		if had && old.Status != string(wb.Succeeded) && x.Status == string(wb.Succeeded) && wb.IsSideEffect(x.Step) && !sentKeys[x.Key()] && a.Verify {
			saw.verified++
			continue
		}
		saw.written[x.Step]++
	}
	return saw
}

// finishedRun folds a run that reported: its settings, its counts against
// the witness, its held list, failure and status against the journal and
// the receiver's log, and its time against the floor.
func (f *folder) finishedRun(ln *line, rr wb.RunResult, saw witnessed, r RunObs, rt RunTiming) {
	tf, a, p := ln.tf, ln.a, ln.p
	if rr.Mode != a.Mode || rr.JobID != a.Job || rr.Items != f.st.Items {
		f.c.Proc(p, "stdout", "the worker says it ran %s of job %s over %d items; its command line gives %s, %s, %d", rr.Mode, rr.JobID, rr.Items, a.Mode, a.Job, f.st.Items)
	}
	f.checkReadBack(p, a, rr)
	if rr.SerializationRetries != 0 {
		// Only runs of one job racing (explore's) can make marks meet
		// 40001 or 40P01; here each trial's runs go one at a time.
		f.c.Proc(p, "stdout.result.serialization_retries", "is %d, but no other run shared the trial's journal while it ran", rr.SerializationRetries)
	}
	exec := f.executed(ln, rr, saw)
	total := exec[wb.StepValidate] + exec[wb.StepTransform] + exec[wb.StepNotify]
	// The worker lists only the steps it ran, as the oracle does.
	for step, n := range exec {
		if n == 0 {
			delete(exec, step)
		}
	}
	if rr.ExecutedSteps != total {
		f.c.Proc(p, "stdout.result.executed_steps", "is %d, but the steps executed add up to %d", rr.ExecutedSteps, total)
	}
	r.ExecutedSteps, r.ExecutedByStep = total, exec
	r.Held, r.Failed, r.ErrorType = rr.Held, rr.Failed, rr.ErrorType
	if r.Held == nil {
		r.Held = []string{}
	}
	f.checkFailed(ln, rr)
	f.checkHeld(ln, rr)
	r.SkippedSteps = f.skipped(ln, rr, saw.verified)
	switch {
	case r.ExitCode == protocol.ExitStepFailed:
		r.Status = wb.StatusFailed
	case len(r.Held) > 0:
		r.Status = wb.StatusNeedsReview
	default:
		r.Status = wb.StatusCompleted
	}
	if rr.Status != r.Status {
		f.c.Proc(p, "stdout.result.status", "is %q, but exit code %d with %d held items gives %q", rr.Status, r.ExitCode, len(r.Held), r.Status)
	}
	rt.WorkerMS = &rr.MS
	rt.FloorMS = floorOf(f.st.LatencyMS, exec)
	if rr.MS < rt.FloorMS-1e-9 {
		f.c.Proc(p, "stdout.result.ms", "%v ms in the worker is below the %v ms the simulated latencies of its executed steps take", rr.MS, rt.FloorMS)
	}
	if rr.MS > p.DurationMS {
		f.c.Proc(p, "stdout.result.ms", "%v ms in the worker is longer than the process's %v ms", rr.MS, p.DurationMS)
	}
	tf.timings = append(tf.timings, rt)
	tf.runs = append(tf.runs, r)
	tf.lastHeld = r.Held
}

// executed is the steps the run executed, by step: the parent's count
// wherever it has one (sends from the receiver's log, and every step of a
// journal run from the rows it wrote), each checked against the worker's.
func (f *folder) executed(ln *line, rr wb.RunResult, saw witnessed) map[string]int {
	p, sent := ln.p, saw.sent
	exec := map[string]int{}
	for _, step := range wb.Steps {
		exec[step] = rr.Executed[step]
	}
	for step := range rr.Executed {
		if stepIndex(step) < 0 {
			f.c.Proc(p, "stdout.result.executed_by_step", "names step %q", step)
		}
	}
	if exec[wb.StepNotify] != sent {
		f.c.Proc(p, "stdout.result.executed_by_step.notify_external", "the worker says %d, the receiver logged %d sends %s", exec[wb.StepNotify], sent, receiver.SentFrom(ln.o.Sender))
	}
	exec[wb.StepNotify] = sent
	if ln.a.Mode == wb.ModeJournal {
		for _, step := range wb.Steps {
			if rr.Executed[step] != saw.written[step] {
				f.c.Proc(p, "stdout.result.executed_by_step."+step, "the worker says %d, but it wrote %d %s rows of the journal while it ran", rr.Executed[step], saw.written[step], step)
			}
			exec[step] = saw.written[step]
		}
	} else if exec[wb.StepValidate] != sent || exec[wb.StepTransform] != sent {
		// Without a journal every item runs its three steps in order and
		// only a send can stop the run, so each local step ran once per
		// send the receiver logged.
		f.c.Proc(p, "stdout.result.executed_by_step", "validate %d and transform %d, but a run without a journal runs each once per send, and the receiver logged %d", exec[wb.StepValidate], exec[wb.StepTransform], sent)
	}
	return exec
}

// checkPoints matches the crash points the worker passed with the sends
// the receiver logged: one before-send per send, in order, then an
// after-send-accepted for every send that got a receipt back.
func (f *folder) checkPoints(p results.Process, points []string, sends []receiver.Entry, crashedAt string) {
	var want []string
	for _, e := range sends {
		want = append(want, wb.ItemPoint(wb.PointBeforeSend, e.Item))
		if e.Outcome == receiver.SendAccepted || e.Outcome == receiver.SendReplayed {
			want = append(want, wb.ItemPoint(wb.PointAfterSendAccepted, e.Item))
		}
	}
	if crashedAt != "" && (len(want) == 0 || want[len(want)-1] != crashedAt) {
		want = append(want, crashedAt)
	}
	if strings.Join(points, " ") != strings.Join(want, " ") {
		f.c.Proc(p, "stdout.points", "%s, but the receiver's log implies %s", results.CompactN(points, 160), results.CompactN(want, 160))
	}
}

// checkFailed checks a step failure against the receiver's log and the
// journal: only a send fails, and it is the last one the log holds.
func (f *folder) checkFailed(ln *line, rr wb.RunResult) {
	p, exit := ln.p, ln.p.ExitCode
	if (exit == protocol.ExitStepFailed) != (rr.Failed != "") {
		f.c.Proc(p, "stdout.result.failed", "%q with exit code %d; a failed step exits 18 and names the step", rr.Failed, exit)
		return
	}
	if rr.Failed == "" {
		if rr.ErrorType != "" {
			f.c.Proc(p, "stdout.result.error_type", "%q without a failed step", rr.ErrorType)
		}
		return
	}
	var last receiver.Entry
	if n := len(ln.sent); n > 0 {
		last = ln.sent[n-1]
	}
	wantType := map[string]string{receiver.SendRejected: "ReceiverUnavailable", receiver.SendAcceptedNoReply: "NoReply"}[last.Outcome]
	if rr.Failed != last.Item+":"+last.Step || rr.ErrorType != wantType || wantType == "" {
		f.c.Proc(p, "stdout.result.failed", "%s %s, but its last send in the receiver's log is %s:%s %s", rr.Failed, rr.ErrorType, last.Item, last.Step, last.Outcome)
	}
	if ln.a.Mode != wb.ModeJournal {
		return
	}
	k := wire.Key{Job: ln.a.Job, Item: last.Item, Step: last.Step}
	for _, r := range ln.o.Journal {
		if r.Key() == k && (r.Status != string(wb.Failed) || r.ErrorType != rr.ErrorType) {
			f.c.Proc(p, "stdout.result.error_type", "%q, but the journal row %s is %s with error_type %q", rr.ErrorType, k, r.Status, r.ErrorType)
		}
	}
}

// checkHeld checks the held list against the journal before and after the
// run: an unknown send is a side-effect row left unfinished that the run
// neither sent again nor changed, and an input change is a row whose digest
// differs from the run's body; and every such row is held.
func (f *folder) checkHeld(ln *line, rr wb.RunResult) {
	a, p := ln.a, ln.p
	if a.Mode != wb.ModeJournal {
		if len(rr.Held) > 0 || rr.SkippedSteps != 0 {
			f.c.Proc(p, "stdout.result.held", "%v with %d skipped, but a run without a journal holds and skips nothing", rr.Held, rr.SkippedSteps)
		}
		return
	}
	after := byKey(ln.o.Journal)
	byItem := map[string]map[string]wb.JournalRow{}
	for _, r := range ln.before {
		if r.Job != a.Job {
			continue
		}
		if byItem[r.Item] == nil {
			byItem[r.Item] = map[string]wb.JournalRow{}
		}
		byItem[r.Item][r.Step] = r
	}
	var want []string
	for item, rows := range byItem {
		d, _ := f.itemDigest(item, a.ChangeItem)
		// The worker walks the steps in order: a row for another body
		// holds the item, a finished or local step goes on, and an
		// unfinished send it cannot confirm holds it.
		for _, step := range wb.Steps {
			x, ok := rows[step]
			if !ok {
				continue
			}
			if x.Digest != d {
				want = append(want, item+":"+step+":"+wb.HeldInputChanged)
				break
			}
			if x.Status == string(wb.Succeeded) || !wb.IsSideEffect(step) {
				continue
			}
			if after[x.Key()] == x {
				want = append(want, item+":"+step+":"+wb.HeldUnknown)
			}
			break
		}
	}
	sort.Strings(want)
	got := append([]string{}, rr.Held...)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.c.Proc(p, "stdout.result.held", "%v, but the journal before and after the run gives %v", rr.Held, want)
	}
}

// skipped counts the steps the run found SUCCEEDED for its own body, up
// to where it stopped, plus the sends it verified; the worker's count is
// checked against it.
func (f *folder) skipped(ln *line, rr wb.RunResult, verified int) int {
	a := ln.a
	if a.Mode != wb.ModeJournal {
		return rr.SkippedSteps
	}
	stop := f.st.Items*len(wb.Steps) + 1
	if rr.Failed != "" {
		item, step, _ := strings.Cut(rr.Failed, ":")
		if n, err := strconv.Atoi(strings.TrimPrefix(item, "item-")); err == nil {
			stop = (n-1)*len(wb.Steps) + stepIndex(step)
		}
	}
	held := map[string]int{}
	for _, h := range rr.Held {
		parts := strings.Split(h, ":")
		if len(parts) == 3 {
			held[parts[0]] = stepIndex(parts[1])
		}
	}
	n := verified
	for _, r := range ln.before {
		pos := stepIndex(r.Step)
		num, err := strconv.Atoi(strings.TrimPrefix(r.Item, "item-"))
		if r.Job != a.Job || r.Status != string(wb.Succeeded) || err != nil || pos < 0 {
			continue
		}
		if (num-1)*len(wb.Steps)+pos >= stop {
			continue
		}
		if h, ok := held[r.Item]; ok && pos >= h {
			continue
		}
		if d, _ := f.itemDigest(r.Item, a.ChangeItem); d != r.Digest {
			continue
		}
		n++
	}
	if rr.SkippedSteps != n {
		f.c.Proc(ln.p, "stdout.result.skipped_steps", "the worker says %d, but the journal before the run held %d SUCCEEDED steps it reached, and it verified %d", rr.SkippedSteps, n-verified, verified)
	}
	return n
}

// checkReadBack checks the settings a run says its journal read back: on
// SQLite the file's pragmas, on PostgreSQL the session's settings, which
// every journal run of the folder must also read back from one server. A
// run without a journal opens neither.
func (f *folder) checkReadBack(p results.Process, a Action, rr wb.RunResult) {
	if a.Mode != wb.ModeJournal {
		if rr.SQLite != nil || rr.Postgres != nil {
			f.c.Proc(p, "stdout.result", "read back sqlite %s postgres %s, but a run without a journal opens no database", results.Compact(rr.SQLite), results.Compact(rr.Postgres))
		}
		return
	}
	if f.st.Postgres == nil && (rr.SQLite == nil || *rr.SQLite != f.st.SQLite) {
		f.c.Proc(p, "stdout.result.sqlite", "the worker read back %s, the settings require %s", results.Compact(rr.SQLite), results.Compact(f.st.SQLite))
	}
	if f.st.Postgres != nil && rr.SQLite != nil {
		f.c.Proc(p, "stdout.result.sqlite", "%s, but the run is on PostgreSQL and opens no SQLite file", results.Compact(rr.SQLite))
	}
	if msg := backend.CheckReadBack(f.st.Postgres, rr.Postgres); msg != "" {
		f.c.Proc(p, "stdout.result.postgres", "%s", msg)
	}
	if rr.Postgres == nil {
		return
	}
	if f.pgRB == nil {
		f.pgRB = rr.Postgres
	} else if *rr.Postgres != *f.pgRB {
		f.c.Proc(p, "stdout.result.postgres", "read back %s, but an earlier journal run of the folder read back %s from the run's one server", results.Compact(rr.Postgres), results.Compact(f.pgRB))
	}
}
