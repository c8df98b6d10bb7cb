package patternfile

import (
	"path/filepath"
	"reflect"

	"fmt"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/worker/natswire"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// ConsumeProgramArgs are a program's delivery d on the trial's broker:
// the consumer fetches from the trial's stream and consumer, and runs the
// pattern's command in dir with the environment it would get without a
// broker; the first delivery carries the trial's fault, which the
// consumer makes on its program as the parent does without a broker (at
// the trial's point, at its k-th point, or after its delay, from the
// first point's arrival when fromFirst).
func ConsumeProgramArgs(s Settings, c Condition, o Observation, d Delivery, pat Pattern, dir string, fromFirst bool, env map[string]string) wp.ConsumeProgramArgs {
	b := s.trialSettings(c, o.Trial)
	a := wp.ConsumeProgramArgs{
		Sub:     natswire.Sub{URL: o.Broker.URL, Stream: b.Stream, Consumer: b.Consumer, FetchWait: b.FetchWait()},
		EventID: s.EventID, Dir: dir, TimeoutMS: pat.TimeoutMS, Env: env, Command: pat.File.Command,
	}
	if d.Number != 1 {
		return a
	}
	f := firstFault(c, o, d.Worker)
	a.Fault.Point, a.Fault.K = f.At, f.Hit
	if f.KillUS > 0 {
		a.Fault.KillUS, a.Fault.FromFirst = f.KillUS, fromFirst
	}
	return a
}

// consumeProgram runs delivery d of a program on the trial's broker: a
// consumer process (pattern.consume-program) fetches the message and runs
// the program. Its line is recorded as the runner records it, and the
// program's line, which the consumer measured as the harness measures a
// program, after it, as it is without a broker. The broker's state after
// it is recorded in d, and says whether the event was acked.
func (t *trial) consumeProgram(d Delivery) (Delivery, *harness.ProgramRun, bool, error) {
	label := fmt.Sprintf("trial %d delivery %d.%d", t.o.Trial, d.Number, d.Worker)
	a := ConsumeProgramArgs(t.r.s, t.c, *t.o, d, t.r.pat, t.r.progDir, t.r.fromFirst, programEnv(t.r.s, *t.o, d, t.db.Session))
	proc, err := t.r.env.Runner.Run(t.r.ctx, harness.Spec{
		Scenario: t.r.as, Condition: t.c.Name, Label: label,
		Worker: wp.ProgramConsumerName, Args: a.Argv(), Exits: []int{protocol.ExitACK, wp.ExitNotAcked},
	})
	if err != nil {
		return d, nil, false, fmt.Errorf("%s trial %d: %w", t.c.Name, t.o.Trial, err)
	}
	d.Consumer = proc.Record.ID
	var res ProgramResult
	if err := results.DecodeStrict(proc.Report.Result, &res); err != nil || res.Program == nil {
		return d, nil, false, fmt.Errorf("%w: %s trial %d: the consumer ran no program (%v): %s", errclass.ErrHarness, t.c.Name, t.o.Trial, err, proc.Report.Result)
	}
	ran := res.Program
	run := &harness.ProgramRun{Record: ran.Record, Points: ran.Points, PointsUS: ran.PointsUS, KilledAt: ran.KilledAt, Stray: ran.Stray, TimedOut: ran.TimedOut, SocketCut: ran.SocketCut}
	run.Record.Scenario, run.Record.Condition, run.Record.Label = t.r.as, t.c.Name, label
	if err := t.r.env.Recorder.AppendProcess(&run.Record); err != nil {
		return d, nil, false, fmt.Errorf("%w: record process: %w", errclass.ErrHarness, err)
	}
	acked, err := t.brokerOn(&d)
	return d, run, acked, err
}

// brokerProcess is the process that holds the broker's word on delivery
// d: a program's consumer, else the delivery's own.
func (f *folder) brokerProcess(t *trialLine, d Delivery) (results.Process, bool) {
	if t.pat.File.IsProgram() {
		return f.rec.Process(d.Consumer)
	}
	return f.rec.Process(d.ProcessID)
}

// consumedOf is the broker's word in consumer p's report.
func consumedOf(p results.Process, raw []byte) (*wr.Consumed, error) {
	if p.Worker == wp.ProgramConsumerName {
		var r ProgramResult
		err := results.DecodeStrict(raw, &r)
		return r.Broker, err
	}
	var r wp.Result
	err := results.DecodeStrict(raw, &r)
	return r.Broker, err
}

// programConsumer checks the consumer that ran delivery i's program prog
// on a broker: its command line from the settings, its exit from its
// program's (0 only after the program exited 0, ExitNotAcked otherwise,
// and never a signal: nothing kills it), and that what it reported of its
// program is the program's line and the delivery's points as recorded.
// Without a broker a delivery has no consumer.
func (f *folder) programConsumer(t *trialLine, i int, d Delivery, prog results.Process) {
	field := results.Field("deliveries", i, "consumer_id")
	if f.st.Broker == nil || t.o.Broker == nil {
		if d.Consumer != 0 {
			f.c.Obs(t.l, field, "is %d, but the run had no broker", d.Consumer)
		}
		return
	}
	p, ok := f.c.Use(f.rec, t.l, d.Consumer)
	if !ok {
		return
	}
	want := ConsumeProgramArgs(f.st, t.c, t.o, d, t.pat, "", KillFromFirst(t.pat, f.discovered(t.pat)), ProgramEnv(f.st, t.o, d))
	if len(p.Argv) > 2 {
		if got, err := wp.ParseConsumeProgramArgs(p.Argv[3:]); err == nil && filepath.IsAbs(got.Dir) {
			want.Dir = got.Dir // where the program ran: the pattern file's folder on the machine
		}
	}
	f.c.Argv(p, wp.ProgramConsumerName, want.Argv())
	progACK := prog.ExitCode == protocol.ExitACK && prog.Signal == ""
	switch {
	case p.Signal != "":
		f.c.Proc(p, "signal", "delivery %d's consumer died from %s; nothing kills a program's consumer", d.Number, p.Signal)
		return
	case progACK && p.ExitCode != protocol.ExitACK || !progACK && p.ExitCode != wp.ExitNotAcked:
		f.c.Proc(p, "exit_code", "is %d, but its program exited %d (signal %q): a consumer exits 0 after its program's 0 and its ack, else %d", p.ExitCode, prog.ExitCode, prog.Signal, wp.ExitNotAcked)
		return
	}
	rep, ok := f.c.Report(p)
	if !ok {
		return
	}
	var r ProgramResult
	if err := results.DecodeStrict(rep.Result, &r); err != nil || r.Program == nil {
		f.c.Proc(p, "stdout", "delivery %d's consumer reports no program (%v)", d.Number, err)
		return
	}
	rec := r.Program.Record
	rec.ID, rec.Scenario, rec.Condition, rec.Label = prog.ID, prog.Scenario, prog.Condition, prog.Label
	seen := ProgramRan{Record: prog.ProcessRecord, Points: d.Points, PointsUS: d.PointsUS, KilledAt: d.KilledAt, Stray: d.Stray, TimedOut: d.TimedOut, SocketCut: d.SocketCut}
	if seen.Points == nil {
		seen.Points = []string{} // the observation's omitempty
	}
	if r.Program.Record = rec; !reflect.DeepEqual(*r.Program, seen) {
		f.c.Proc(p, "stdout", "delivery %d's consumer reports its program as %s, but the records say %s", d.Number, results.Compact(r.Program), results.Compact(seen))
	}
}
