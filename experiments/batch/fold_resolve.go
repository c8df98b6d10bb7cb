package batch

import (
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
)

// resolveLine folds a resolve: the parent's lookup against the receiver's
// log, the send against the previous run's held list, the row it changed,
// then its command line, exit and report.
func (f *folder) resolveLine(ln *line) {
	l, o, k, tf := ln.l, ln.o, ln.key, ln.tf
	if len(ln.sent) > 0 {
		f.c.Obs(l, "sends", "%d sends while resolve %s ran; resolve sends nothing", len(ln.sent), k)
	}
	if o.Lookup == nil {
		f.c.Obs(l, "lookup", "missing; every resolve follows the parent's lookup at the receiver")
		return
	}
	lk := *o.Lookup
	if lk.Key != k.String() {
		f.c.Obs(l, "lookup.key", "is %q, want %q", lk.Key, k)
	}
	rc, found := tf.accepts[k]
	if lk.Found != found || lk.Receipt != rc {
		f.c.Obs(l, "lookup", "found=%v receipt %q, but the receiver's log up to here gives found=%v receipt %q", lk.Found, lk.Receipt, found, rc)
	}
	held := false
	for _, h := range tf.lastHeld {
		held = held || h == k.Item+":"+k.Step+":"+wb.HeldUnknown
	}
	if !held {
		f.c.Obs(l, "step", "resolves %s, which the previous run did not report as held unknown (%v)", k, tf.lastHeld)
	}
	for i, r := range o.Journal {
		if r.Key() != k {
			continue
		}
		if !lk.Found || r.Status != string(wb.Succeeded) || r.Receipt != lk.Receipt {
			f.c.Obs(l, results.Field("journal", i), "%s is %s receipt %q after resolve with delivered=%v receipt %q", k, r.Status, r.Receipt, lk.Found, lk.Receipt)
		}
	}
	tf.resolved = append(tf.resolved, ResolveObs{Key: k.String(), Delivered: lk.Found, Receipt: lk.Receipt})
	if ln.pok {
		f.resolveProcess(ln.p, resolveArgs(f.st, lk, o.DB, k))
	}
}

// resolveProcess checks a resolve's process: the command line the lookup
// gives, no crash point, exit 0, and a report that repeats its arguments.
func (f *folder) resolveProcess(p results.Process, args wb.ResolveArgs) {
	f.c.Argv(p, wb.WorkerResolve, args.Argv())
	f.c.Env(p, nil)
	if p.ExitCode != protocol.ExitACK {
		f.c.Proc(p, "exit_code", "%s %s, but a resolve that the run went on from exits 0", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
	}
	rep, ok := f.c.Report(p)
	if !ok {
		return
	}
	want := wb.ResolveResult{Key: args.Key.String(), Delivered: args.Delivered, Receipt: args.Receipt}
	var rr wb.ResolveResult
	if err := results.DecodeStrict(rep.Result, &rr); err != nil {
		f.c.Proc(p, "stdout", "the report's result is not a resolve result: %v", err)
	} else if rr != want {
		f.c.Proc(p, "stdout.result", "%s, but the parent passed %s delivered=%v receipt %q", results.Compact(rr), args.Key, args.Delivered, args.Receipt)
	}
}
