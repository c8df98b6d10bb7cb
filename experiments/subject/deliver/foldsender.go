package deliver

import (
	"fmt"
	"slices"

	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject"
	"idemlab/worker/wire"
)

// Sends are attributed by sender, never by time: the parent mints each
// process's token before it starts it (the trial's n-th process is
// wire.Token(n)), records it in the observation of the process's step
// and gives the process the receiver URL that carries it, and the
// receiver logs it with every send. A send the receiver logged only after
// the parent had seen its sender end (it is in no state read before that
// process's step was observed) landed late; it counts for the trial as the
// receiver saw it, and is recorded as a receiver.LateSend.

// senders checks the tokens an observation lists for its processes, the
// first being the trial's first-th process, and returns one per process:
// empty throughout in a folder of format 4 or older, whose observations
// list none, and for a pattern that does not send.
func (f *folder) senders(pat subject.Subject, e entry, first int) []string {
	out := make([]string, len(e.o.ProcessIDs))
	if e.o.Senders == nil {
		return out
	}
	want := make([]string, len(e.o.ProcessIDs))
	for k := range want {
		want[k] = wire.Token(first + k)
	}
	if !pat.Sends || !slices.Equal(e.o.Senders, want) {
		f.c.Obs(e.l, "senders", "%v, but the step's processes are the trial's %d to %d and pattern %s sends: %v; the parent mints token p<n> for the trial's n-th process", e.o.Senders, first, first+len(want)-1, pat.Name, pat.Sends)
		return out
	}
	return want
}

// lateSends checks that every send in the trial's last state came from a
// process of the trial, and records those the receiver logged only after
// the parent had seen their sender end. es are the trial's steps in order;
// a trial whose observations carry no tokens (format 4 or older) is left
// as it was read.
func (f *folder) lateSends(cf condFold, i int, es []entry) {
	if len(es) == 0 || es[0].o.Senders == nil {
		return
	}
	type proc struct {
		step   int
		signal string
	}
	by := map[string]proc{}
	for j, e := range es {
		if e.o.Senders == nil {
			f.c.Obs(e.l, "senders", "absent, but the trial's first step lists its processes' sender tokens; every step of a trial that sends lists them")
		}
		for k, tok := range e.o.Senders {
			if k >= len(e.o.ProcessIDs) {
				break
			}
			p, _ := f.rec.Process(e.o.ProcessIDs[k])
			by[tok] = proc{step: j, signal: p.Signal}
		}
	}
	last := es[len(es)-1]
	for _, x := range subject.Sends(last.o.Rows) {
		p, ok := by[x.Sender]
		if !ok {
			who := "sender " + x.Sender
			if x.Sender == wire.SenderUnknown {
				who = "sender unknown"
			}
			f.c.Obs(last.l, "rows."+subject.TableSends, "send %d (%s %s) names %s, no process of %s trial %d", x.Seq, x.Item, x.Outcome, who, cf.c.Name, i)
			continue
		}
		if x.Seq <= len(es[p.step].o.Rows[subject.TableSends]) {
			continue
		}
		note := receiver.LateNote(p.signal)
		f.extra.LateSends = append(f.extra.LateSends, receiver.LateSend{
			Condition: cf.c.Name, Trial: i, Sender: x.Sender, Step: es[p.step].o.Step,
			Seq: x.Seq, Item: x.Item, Outcome: x.Outcome, Note: note,
		})
	}
}

// LateSendsTable lists the late sends for the report, the first 10.
func LateSendsTable(ls []receiver.LateSend) scenario.Table {
	t := scenario.Table{
		Title:  fmt.Sprintf("sends the receiver logged after the parent saw their sender end (%d)", len(ls)),
		Header: []string{"condition", "trial", "sender", "seq", "item", "outcome", "note"},
		Legend: []string{"each counts for its trial's invariants as the receiver saw it, and for its sender, not for the process running when it landed"},
	}
	for _, l := range ls[:min(10, len(ls))] {
		t.Rows = append(t.Rows, []string{l.Condition, fmt.Sprint(l.Trial), l.Step + " (" + l.Sender + ")", fmt.Sprint(l.Seq), l.Item, l.Outcome, l.Note})
	}
	return t
}
