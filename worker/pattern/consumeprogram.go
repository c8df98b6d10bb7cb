package pattern

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"idemlab/worker/natswire"
	"idemlab/worker/protocol"
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

// MessageEnv are the message's variables for delivery count n.
func MessageEnv(msgID string, n uint64) map[string]string {
	red := "0"
	if n > 1 {
		red = "1"
	}
	return map[string]string{EnvMsgID: msgID, EnvDeliveryCount: strconv.FormatUint(n, 10), EnvRedelivered: red}
}
