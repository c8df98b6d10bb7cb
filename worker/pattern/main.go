package pattern

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// WorkerName is the registry name of the pattern worker.
const WorkerName = "pattern.deliver"

// Args are the pattern worker's arguments, rendered by the parent with
// Argv and read by the worker with ParseArgs, so the two sides cannot
// drift apart.
type Args struct {
	// File is the pattern file.
	File string
	// DB is a SQLite file, or a PostgreSQL connection string when Backend
	// is postgres.
	DB       string
	EventID  string
	Delivery int
	Worker   int
	// NowOffsetMS is added to the worker's clock for :now_ms.
	NowOffsetMS int64
	// Receiver is the receiver's base URL; empty when nothing is sent.
	Receiver string
	// ReadyFD, when 3 or more, makes the worker a racer: it signals ready
	// there and waits for the parent's release before its first step.
	ReadyFD int
	// Backend is empty for SQLite, which keeps the command line as it was
	// before there was a choice, or postgres.
	Backend string
}

// Argv renders the arguments in a fixed order.
func (a Args) Argv() []string {
	out := []string{"-file", a.File, "-db", a.DB, "-event-id", a.EventID,
		"-delivery", strconv.Itoa(a.Delivery), "-worker", strconv.Itoa(a.Worker),
		"-now-offset-ms", strconv.FormatInt(a.NowOffsetMS, 10)}
	if a.Receiver != "" {
		out = append(out, "-receiver", a.Receiver)
	}
	if a.ReadyFD != 0 {
		out = append(out, "-ready-fd", strconv.Itoa(a.ReadyFD))
	}
	return store.BackendArgv(out, a.Backend)
}

// ParseArgs reads what Argv wrote.
func ParseArgs(args []string) (Args, error) {
	var a Args
	fs := flag.NewFlagSet(WorkerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	check := a.bind(fs)
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if fs.NArg() > 0 {
		return a, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return a, check()
}

// bind declares Argv's flags on fs and returns the check to run after
// fs.Parse.
func (a *Args) bind(fs *flag.FlagSet) (check func() error) {
	fs.StringVar(&a.File, "file", "", "pattern file")
	fs.StringVar(&a.DB, "db", "", "database file")
	fs.StringVar(&a.EventID, "event-id", "", "event id")
	fs.IntVar(&a.Delivery, "delivery", 0, "delivery number from 1")
	fs.IntVar(&a.Worker, "worker", 0, "racer slot")
	fs.Int64Var(&a.NowOffsetMS, "now-offset-ms", 0, "clock offset")
	fs.StringVar(&a.Receiver, "receiver", "", "receiver base URL")
	fs.IntVar(&a.ReadyFD, "ready-fd", 0, "descriptor to signal readiness on")
	backend := store.BindBackend(fs, &a.Backend)
	return func() error {
		if err := backend(); err != nil {
			return err
		}
		switch {
		case a.File == "" || a.DB == "" || a.EventID == "":
			return errors.New("-file, -db and -event-id are required")
		case a.Delivery < 1:
			return errors.New("-delivery: want 1 or more")
		case a.ReadyFD != 0 && a.ReadyFD < 3:
			return errors.New("-ready-fd: want 3 or more")
		}
		return nil
	}
}

// Options are the database settings of a pattern's delivery: the
// article's, which the power class replaces through the environment.
func Options(path string) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: "DELETE", Synchronous: "FULL", BusyTimeout: 5 * time.Second}
}

// Result is the worker's report payload: the outcome and what the
// connection read back, SQLite's pragmas or PostgreSQL's settings.
type Result struct {
	Outcome  Outcome           `json:"outcome"`
	Settings sqlitedb.Settings `json:"settings"`
	Postgres *store.PGSettings `json:"postgres,omitempty"`
	// Broker is the broker's word on the message, from pattern.consume
	// only.
	Broker *wr.Consumed `json:"broker,omitempty"`
}

// Main is the registered worker "pattern.deliver": one delivery of the
// handler. It exits 0 (ACK) when the handler ran to its end or a stop, and
// ExitStepFailed with the step's error when a step failed.
func Main(call *protocol.Call) int {
	a, err := ParseArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	return handle(call, a, stderrAck(call.Stderr), nil, nil)
}

// handle runs one delivery of a's handler, its ack step calling ack.
// before, when set, runs once the handler is done and the database
// closed, before the report: a broker consumer's ack after the work. res,
// when set, is the result the report carries, filled in here.
func handle(call *protocol.Call, a Args, ack func() error, before func() error, res *Result) int {
	if res == nil {
		res = &Result{}
	}
	b, err := os.ReadFile(a.File)
	if err != nil {
		return call.Usage(err)
	}
	f, err := Decode(b)
	if err != nil {
		return call.Usage(fmt.Errorf("%s: %w", a.File, err))
	}
	opts, err := sqlitedb.FromEnv(Options(a.DB))
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	st, rb, err := store.Open(ctx, a.Backend, a.DB, opts)
	if err != nil {
		return call.Fail(err)
	}
	db := st.DB
	conn, err := db.Conn(ctx)
	if err != nil {
		return call.Fail(fmt.Errorf("take a connection: %w", err))
	}
	if a.ReadyFD != 0 {
		if err := protocol.AwaitRelease(a.ReadyFD, call.Stdin); err != nil {
			return call.Fail(err)
		}
	}
	d := Delivery{EventID: a.EventID, Number: a.Delivery, Worker: a.Worker, NowMS: time.Now().UnixMilli() + a.NowOffsetMS, Ack: ack}
	out := Run(ctx, conn, st.Dialect, f, d, httpSender{base: a.Receiver}, call.Points)
	res.Outcome, res.Postgres = out, rb.Postgres
	if rb.SQLite != nil {
		res.Settings = *rb.SQLite
	}
	// A stop or a failed step ends the handler on a shorter path than
	// discovery's, so a crash chosen further along is rightly never
	// reached: a racer whose insert lost to another's is a failed
	// delivery, not a worker that disagrees with the parent on its points.
	if out.Error != "" || out.StoppedAt > 0 {
		call.Points.Disarm()
	}
	if out.Error != "" {
		// Exit without closing, as a failed process would: whatever the
		// step left open is rolled back by the next open.
		fmt.Fprintf(call.Stderr, "worker %s: step %d: %s\n", call.Name, out.FailedStep, out.Error)
		return call.Finish(res, protocol.ExitStepFailed)
	}
	// An ACK with the connection still open (protocol.EnvAckOpen) reports
	// and exits here, as a service with a connection pool ACKs before any
	// close: no close-time checkpoint runs.
	call.AckOpen(res)
	if err := errors.Join(conn.Close(), db.Close()); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	if before != nil {
		if err := before(); err != nil {
			return call.Fail(err)
		}
	}
	return call.Finish(res, protocol.ExitACK)
}

// AckLine is the line the pattern worker writes on its standard error at
// its handler's ack step: under --broker none the harness is the broker,
// and this line, read from the pipe it holds, is the delivery's ACK. It
// outlives a crash or a kill right after it, as an ack on a broker's
// socket does.
const AckLine = "pattern.deliver: ack"

// stderrAck acknowledges a delivery to the harness on w, in one write.
func stderrAck(w io.Writer) func() error {
	return func() error {
		_, err := io.WriteString(w, AckLine+"\n")
		return err
	}
}

// AckedOnStderr says whether a pattern worker's standard error holds its
// ack step's ACK.
func AckedOnStderr(stderr string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if l == AckLine {
			return true
		}
	}
	return false
}

type httpSender struct{ base string }

func (h httpSender) Send(ctx context.Context, eventID, step, key string) (SendResult, error) {
	res := SendResult{Step: step, Key: key}
	if h.base == "" {
		return res, errors.New("no receiver was given")
	}
	req, err := wire.NewPublicRequest(ctx, h.base, wire.PublicSend{EventID: eventID, Step: step}, key)
	if err != nil {
		return res, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("receiver answered %s", resp.Status)
	}
	var rep wire.PublicReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&rep); err != nil {
		return res, fmt.Errorf("read the receiver's answer: %w", err)
	}
	res.Outcome, res.Receipt = rep.Outcome, rep.Receipt
	return res, nil
}
