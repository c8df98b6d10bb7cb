package pattern

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// ProgramConsumerName is the registry name of the broker consumer for a
// user's handler program: it fetches one message from the durable pull
// consumer, runs the program for it in a process group of the program's
// own, as the harness runs programs without a broker, and acks
// synchronously when the program exits 0. A program that exits otherwise,
// or dies, is not acked, and the consumer exits too (ExitNotAcked): the
// broker redelivers after AckWait to the next consumer.
const ProgramConsumerName = "pattern.consume-program"

// ExitNotAcked is the consumer's exit when its program did not exit 0:
// no ack was sent.
const ExitNotAcked = protocol.ExitStepFailed

// The variables a program gets on a broker, beside the handler-program
// protocol's own: the message's Nats-Msg-Id, the broker's delivery count
// and its redelivered flag ("1" from the second delivery, else "0").
const (
	EnvMsgID         = "IDEMLAB_MSG_ID"
	EnvDeliveryCount = "IDEMLAB_DELIVERY_COUNT"
	EnvRedelivered   = "IDEMLAB_REDELIVERED"
)

// ProgramFault is where the consumer kills its program, as the parent
// would without a broker: at the announced point Point, at the K-th
// announced point, or KillUS microseconds after the start (after the
// first point's arrival with FromFirst).
type ProgramFault struct {
	Point     string
	K         int
	KillUS    int64
	FromFirst bool
}

// ConsumeProgramArgs are a program consumer's arguments: where to fetch,
// the event the message must hold, the program's command, folder,
// environment and timeout, and its fault.
type ConsumeProgramArgs struct {
	Sub       natswire.Sub
	EventID   string
	Dir       string
	TimeoutMS int64
	// Env is the program's environment from the harness, without the
	// message's variables, which the consumer adds from what it fetched.
	Env   map[string]string
	Fault ProgramFault
	// Command is the program's command line.
	Command []string
}

// Argv is the command line after the worker name: flags, then "--" and
// the command.
func (a ConsumeProgramArgs) Argv() []string {
	env, _ := json.Marshal(a.Env)
	out := append(a.Sub.Argv(), "-event", a.EventID, "-dir", a.Dir, "-timeout-ms", strconv.FormatInt(a.TimeoutMS, 10), "-env", string(env))
	if a.Fault.Point != "" {
		out = append(out, "-kill-at", a.Fault.Point)
	}
	if a.Fault.K > 0 {
		out = append(out, "-kill-hit", strconv.Itoa(a.Fault.K))
	}
	if a.Fault.KillUS > 0 {
		out = append(out, "-kill-us", strconv.FormatInt(a.Fault.KillUS, 10))
	}
	if a.Fault.FromFirst {
		out = append(out, "-kill-from-first")
	}
	return append(append(out, "--"), a.Command...)
}

// ParseConsumeProgramArgs reads what Argv wrote.
func ParseConsumeProgramArgs(argv []string) (ConsumeProgramArgs, error) {
	var a ConsumeProgramArgs
	fs := flag.NewFlagSet(ProgramConsumerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sub := a.Sub.Bind(fs)
	var env string
	fs.StringVar(&a.EventID, "event", "", "the event id the message holds")
	fs.StringVar(&a.Dir, "dir", "", "the program's folder")
	fs.Int64Var(&a.TimeoutMS, "timeout-ms", 0, "the program's timeout")
	fs.StringVar(&env, "env", "{}", "the program's environment, a JSON object")
	fs.StringVar(&a.Fault.Point, "kill-at", "", "kill the program at this point")
	fs.IntVar(&a.Fault.K, "kill-hit", 0, "kill the program at its k-th point")
	fs.Int64Var(&a.Fault.KillUS, "kill-us", 0, "kill the program after this many microseconds")
	fs.BoolVar(&a.Fault.FromFirst, "kill-from-first", false, "count -kill-us from the first point")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	a.Command = fs.Args()
	var errs []error
	if err := json.Unmarshal([]byte(env), &a.Env); err != nil {
		errs = append(errs, fmt.Errorf("-env: %w", err))
	}
	if a.EventID == "" || a.TimeoutMS <= 0 || len(a.Command) == 0 {
		errs = append(errs, errors.New("-event, a positive -timeout-ms and a command after -- are required"))
	}
	return a, errors.Join(append(errs, sub())...)
}

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

// MessageEnv are the message's variables for delivery count n.
func MessageEnv(msgID string, n uint64) map[string]string {
	red := "0"
	if n > 1 {
		red = "1"
	}
	return map[string]string{EnvMsgID: msgID, EnvDeliveryCount: strconv.FormatUint(n, 10), EnvRedelivered: red}
}

// killAt is the fault's kill at an announced point.
func (f ProgramFault) killAt() func(string, int) bool {
	switch {
	case f.Point != "":
		return func(name string, _ int) bool { return name == f.Point }
	case f.K > 0:
		return func(_ string, n int) bool { return n == f.K }
	}
	return nil
}

// ConsumeProgramMain is the registered worker "pattern.consume-program".
// It exits 0 once the server accepted its ack (written on standard error
// as AckLine), ExitNotAcked when its program did not exit 0, and 0 with
// Fetched false when no message came within the fetch wait.
func ConsumeProgramMain(call *protocol.Call) int {
	t0 := time.Now()
	since := func() float64 { return float64(time.Since(t0).Microseconds()) / 1000 }
	a, err := ParseConsumeProgramArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	res := &ProgramResult{Broker: &wr.Consumed{}}
	got := res.Broker
	c, m, err := wr.Fetch(a.Sub, got, since)
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return call.Fail(err)
	}
	if m == nil {
		return call.Finish(res, protocol.ExitACK)
	}
	var ev string
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev != a.EventID {
		return call.Fail(fmt.Errorf("the message holds %q (%v), the arguments name event %q", m.Data, err, a.EventID))
	}
	env := MessageEnv(got.MsgID, got.Meta.NumDelivered)
	for k, v := range a.Env {
		env[k] = v
	}
	p := harness.Program{
		Scenario: call.Name, Label: ProgramConsumerName, Argv: a.Command, Dir: a.Dir, Env: env,
		Timeout: time.Duration(a.TimeoutMS) * time.Millisecond, KillAt: a.Fault.killAt(), DieWithParent: true,
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
		return call.Finish(res, ExitNotAcked)
	}
	ans, err := c.AckSync(m, wr.AckTimeout)
	if err != nil {
		return call.Fail(fmt.Errorf("ack: %w", err))
	}
	got.Ack, got.AckedMS = &ans, since()
	if !got.Acked() {
		return call.Fail(fmt.Errorf("ack: the server answered %s", Compact(ans)))
	}
	if err := stderrAck(call.Stderr)(); err != nil {
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
