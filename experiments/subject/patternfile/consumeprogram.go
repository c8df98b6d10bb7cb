package patternfile

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/worker"
	wp "idemlab/worker/pattern"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// The consumer of a handler program on a broker (wp.ProgramConsumerName)
// is a child process that runs the user's program as the harness runs
// programs, so it lives here, above the harness, with the parent's side of
// it (progbroker.go), and registers itself in the worker registry; its
// arguments, which both sides read, are worker/pattern's
// (wp.ConsumeProgramArgs). A binary that plans such a delivery imports
// this package, so its re-executed children know the worker.
func init() { worker.Register(wp.ProgramConsumerName, ConsumeProgramMain) }

// ProgramRan is what the consumer saw of its program: the process line
// the harness records for it, as without a broker, and its points.
type ProgramRan struct {
	Record    results.ProcessRecord `json:"record"`
	Points    []string              `json:"points"`
	PointsUS  []int64               `json:"points_us,omitempty"`
	KilledAt  string                `json:"killed_at,omitempty"`
	Stray     []string              `json:"stray,omitempty"`
	TimedOut  bool                  `json:"timed_out,omitempty"`
	SocketCut int64                 `json:"socket_cut,omitempty"`
}

// ProgramResult is a program consumer's report: the broker's word on the
// message and what its program did; Program is nil when nothing was
// fetched.
type ProgramResult struct {
	Broker  *wr.Consumed `json:"broker"`
	Program *ProgramRan  `json:"program,omitempty"`
}

// faultKillAt is the fault's kill at an announced point.
func faultKillAt(f wp.ProgramFault) func(string, int) bool {
	switch {
	case f.Point != "":
		return func(name string, _ int) bool { return name == f.Point }
	case f.K > 0:
		return func(_ string, n int) bool { return n == f.K }
	}
	return nil
}

// ConsumeProgramMain is the worker "pattern.consume-program" (wp.ProgramConsumerName).
// It exits 0 once the server accepted its ack (written on standard error
// as AckLine), ExitNotAcked when its program did not exit 0, and 0 with
// Fetched false when no message came within the fetch wait.
func ConsumeProgramMain(call *protocol.Call) int {
	t0 := time.Now()
	since := func() float64 { return float64(time.Since(t0).Microseconds()) / 1000 }
	a, err := wp.ParseConsumeProgramArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	res := &ProgramResult{Broker: &wr.Consumed{}}
	got := res.Broker
	c, m, err := wr.FetchEvent(a.Sub, got, since, a.EventID)
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return call.Fail(err)
	}
	if m == nil {
		return call.Finish(res, protocol.ExitACK)
	}
	env := wp.MessageEnv(got.MsgID, got.Meta.NumDelivered)
	for k, v := range a.Env {
		env[k] = v
	}
	p := harness.Program{
		Scenario: call.Name, Label: wp.ProgramConsumerName, Argv: a.Command, Dir: a.Dir, Env: env,
		Timeout: time.Duration(a.TimeoutMS) * time.Millisecond, KillAt: faultKillAt(a.Fault), DieWithParent: true,
	}
	if delay := time.Duration(a.Fault.KillUS) * time.Microsecond; a.Fault.FromFirst {
		p.KillAfterFirst = delay
	} else {
		p.KillAfter = delay
	}
	// The program's leader is tied to this thread: Pdeathsig fires when
	// the thread that started it ends, not only the process.
	runtime.LockOSThread()
	run, err := (&harness.Runner{}).RunProgram(context.Background(), p)
	if err != nil {
		return call.Fail(err)
	}
	run.Record.ExecutableSHA256 = executableSHA256(a.Dir, a.Command[0])
	res.Program = &ProgramRan{Record: run.Record, Points: run.Points, PointsUS: run.PointsUS, KilledAt: run.KilledAt, Stray: run.Stray, TimedOut: run.TimedOut, SocketCut: run.SocketCut}
	if res.Program.Points == nil {
		res.Program.Points = []string{}
	}
	if run.Record.ExitCode != protocol.ExitACK || run.Record.Signal != "" {
		return call.Finish(res, wp.ExitNotAcked)
	}
	ans, err := c.AckSync(m, wr.AckTimeout)
	if err != nil {
		return call.Fail(fmt.Errorf("ack: %w", err))
	}
	got.Ack, got.AckedMS = &ans, since()
	if !got.Acked() {
		return call.Fail(fmt.Errorf("ack: the server answered %s", wp.Compact(ans)))
	}
	if _, err := io.WriteString(call.Stderr, wp.AckLine+"\n"); err != nil {
		return call.Fail(err)
	}
	return call.Finish(res, protocol.ExitACK)
}

// executableSHA256 hashes the executable the program's command names,
// found as exec.Cmd finds it; "" when it cannot be read.
func executableSHA256(dir, name string) string {
	path := exec.Command(name).Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	sum, err := results.HashFile(path)
	if err != nil {
		return ""
	}
	return sum
}
