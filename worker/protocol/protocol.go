// Package protocol is the contract between the harness parent and its child
// workers: exit codes, environment variable names, the one-line JSON report
// and named crash points.
//
// The parent re-executes its own binary as "<exe> worker NAME ARGS...". The
// child writes exactly one JSON line on stdout and exits with one of the
// codes below. Anything else (another code, a signal the parent did not
// send, no or a bad report line, a crash at a point the parent did not
// choose) is the worker misbehaving: the parent records the process like
// any other and goes on, and the scenario's fold turns what it did into a
// finding that fails the condition. Only the harness's own faults stop a
// run.
package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Exit codes a child may use. Every other code, and every signal the parent
// did not send itself, is a misbehaving worker: recorded, then judged.
const (
	// ExitACK means the delivery completed and is acknowledged.
	ExitACK = 0
	// ExitUsage means the worker name or its arguments were not understood.
	ExitUsage = 2
	// ExitWorkerError means the worker hit an error it did not expect, such
	// as a failed SQLite call.
	ExitWorkerError = 3
	// ExitCrash is the injected crash: the worker stopped at a named point
	// without any cleanup, like the article's os._exit(17).
	ExitCrash = 17
	// ExitStepFailed means a batch step raised and the run stopped, as the
	// article's runner does after marking the step FAILED.
	ExitStepFailed = 18
)

// Environment variables the parent sets for a child. The parent records
// every variable it sets in raw-processes.jsonl.
const (
	// EnvCrashAt names the crash point at which the child must exit with
	// ExitCrash.
	EnvCrashAt = "IDEMLAB_CRASH_AT"
	// EnvCrashKind says what the crash at EnvCrashAt stands for: empty or
	// CrashKindKill for the process dying, CrashKindPower for the machine
	// losing power. The child exits the same way for both; the kind tells
	// the parent to run faultvfs.Recover before anything reads the files,
	// and it is echoed in the report so the record shows which was meant.
	EnvCrashKind = "IDEMLAB_CRASH_KIND"
	// EnvVFS names the VFS a worker opens its files through; VFSFault
	// selects the power-loss model. For a power cut to mean anything,
	// every process that touched the files since the folder was baselined
	// must have run with it.
	EnvVFS = "IDEMLAB_VFS"
	// EnvJournalMode and EnvSynchronous replace a worker's own journal_mode
	// and synchronous settings, so the durability matrix can run the same
	// worker under every setting; unset keeps the worker's defaults.
	EnvJournalMode = "IDEMLAB_JOURNAL_MODE"
	EnvSynchronous = "IDEMLAB_SYNCHRONOUS"
	// EnvCrashAfterHits, a whole number k >= 1, makes the child exit with
	// ExitCrash at its k-th Hit, whatever the point's name. A seeded k
	// replays exactly, where a kill after a delay cannot.
	EnvCrashAfterHits = "IDEMLAB_CRASH_AFTER_HITS"
	// EnvCutAtSync, "N:before" or "N:after" (see SyncCut), makes the child
	// stop inside its N-th sync through the fault VFS, just before or just
	// after the fsync, and exit with ExitCrash at the point SyncCut.Point
	// names. It needs EnvVFS=VFSFault.
	EnvCutAtSync = "IDEMLAB_CUT_AT_SYNC"
	// EnvAckOpen, set to "1", makes a worker that succeeded report it and
	// exit 0 at once, with its database connection still open, as a
	// long-running consumer that ACKs and goes on would be when the power
	// fails: no close runs, so no close-time checkpoint either.
	EnvAckOpen = "IDEMLAB_ACK_OPEN"
)

// Crash kinds for EnvCrashKind.
const (
	CrashKindKill  = "kill"
	CrashKindPower = "power"
)

// VFSFault is the EnvVFS value that selects the fault-injecting VFS.
const VFSFault = "faultvfs"

// ParseCrashAfterHits reads EnvCrashAfterHits; "" means none (0).
func ParseCrashAfterHits(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number from 1", EnvCrashAfterHits, s)
	}
	return k, nil
}

// SyncCut is a crash inside the N-th sync of a process: just before the
// fsync, or just after it returned.
type SyncCut struct {
	N     int
	After bool
}

// String is the EnvCutAtSync form, "N:before" or "N:after".
func (c SyncCut) String() string {
	if c.After {
		return strconv.Itoa(c.N) + ":after"
	}
	return strconv.Itoa(c.N) + ":before"
}

// Point is the crash point a sync cut reports: "sync-N-before" or
// "sync-N-after".
func (c SyncCut) Point() string {
	if c.After {
		return "sync-" + strconv.Itoa(c.N) + "-after"
	}
	return "sync-" + strconv.Itoa(c.N) + "-before"
}

// ParseSyncCut reads EnvCutAtSync; "" means none (N 0).
func ParseSyncCut(s string) (SyncCut, error) {
	if s == "" {
		return SyncCut{}, nil
	}
	n, when, ok := strings.Cut(s, ":")
	k, err := strconv.Atoi(n)
	if !ok || err != nil || k < 1 || when != "before" && when != "after" {
		return SyncCut{}, fmt.Errorf("%s=%q: want N:before or N:after, N a whole number from 1", EnvCutAtSync, s)
	}
	return SyncCut{N: k, After: when == "after"}, nil
}

// Report is the single JSON line a child writes on stdout.
type Report struct {
	// Worker is the registry name of the worker that ran.
	Worker string `json:"worker"`
	// Points lists, in order, the crash points the worker passed. A sweep
	// uses it to discover points instead of listing them by hand.
	Points []string `json:"points"`
	// CrashedAt is the point at which the worker crashed on purpose.
	CrashedAt string `json:"crashed_at,omitempty"`
	// CrashKind echoes EnvCrashKind on a crash when the parent set it.
	CrashKind string `json:"crash_kind,omitempty"`
	// Error is set when the worker exits with ExitWorkerError or ExitUsage.
	Error string `json:"error,omitempty"`
	// Result is the worker's own payload.
	Result json.RawMessage `json:"result,omitempty"`
}

// Call is one invocation of a worker. It carries the streams, the crash
// points and the reporting helpers, so worker functions never touch the
// process globals and can run in-process in tests.
type Call struct {
	Name   string
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Points *Points
	// ackOpen is EnvAckOpen: AckOpen exits instead of returning.
	ackOpen bool
}

// NewCall prepares a call whose crash point comes from crashAt. exit is the
// function used to crash; nil means os.Exit.
func NewCall(name string, args []string, stdin io.Reader, stdout, stderr io.Writer, crashAt string, exit func(int)) *Call {
	c := &Call{Name: name, Args: args, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	c.Points = &Points{crashAt: crashAt, exit: exit, call: c}
	if c.Points.exit == nil {
		c.Points.exit = os.Exit
	}
	return c
}

// Finish writes the report with result and returns code, so a worker can
// end with "return call.Finish(res, protocol.ExitACK)". A requested crash
// point that was never reached is an error: it means the parent and the
// worker disagree about the points, and the run would silently test nothing.
func (c *Call) Finish(result any, code int) int {
	if c.Points.crashAt != "" {
		return c.Fail(fmt.Errorf("crash point %q was never reached (passed %v)", c.Points.crashAt, c.Points.passed))
	}
	if c.Points.armed != "" {
		return c.Fail(fmt.Errorf("crash point %q was never reached (passed %v)", c.Points.armed, c.Points.passed))
	}
	if k := c.Points.crashAfter; k > 0 {
		return c.Fail(fmt.Errorf("crash after %d hits was never reached (passed %d: %v)", k, len(c.Points.passed), c.Points.passed))
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return c.Fail(fmt.Errorf("encode result: %w", err))
	}
	c.write(Report{Worker: c.Name, Points: c.Points.Passed(), Result: raw})
	return code
}

// SetAckOpen makes AckOpen report and exit; the dispatcher sets it from
// EnvAckOpen.
func (c *Call) SetAckOpen(on bool) { c.ackOpen = on }

// AckOpen is where a worker that succeeded stands just before it closes its
// database. When the parent asked for an ACK with the connection open, it
// reports result as Finish would and exits at once with that code, so
// nothing is closed; otherwise it returns and the worker closes and calls
// Finish as usual.
func (c *Call) AckOpen(result any) {
	if c.ackOpen {
		if c.Points.onStop != nil {
			c.Points.onStop()
		}
		c.Points.exit(c.Finish(result, ExitACK))
	}
}

// Fail reports err and returns ExitWorkerError.
func (c *Call) Fail(err error) int {
	fmt.Fprintf(c.Stderr, "worker %s: %v\n", c.Name, err)
	c.write(Report{Worker: c.Name, Points: c.Points.Passed(), Error: err.Error()})
	return ExitWorkerError
}

// Usage reports a bad argument and returns ExitUsage.
func (c *Call) Usage(err error) int {
	fmt.Fprintf(c.Stderr, "worker %s: %v\n", c.Name, err)
	c.write(Report{Worker: c.Name, Points: c.Points.Passed(), Error: err.Error()})
	return ExitUsage
}

func (c *Call) write(r Report) {
	b, err := r.line()
	if err != nil {
		// Report holds only strings and raw JSON that json.Marshal made,
		// so this cannot happen.
		panic(err)
	}
	// One write call, so the line reaches the pipe whole even if the
	// process dies right after it.
	_, _ = c.Stdout.Write(append(b, '\n'))
}

// line is json.Marshal(r), byte for byte, with a nil Points written as [],
// put together field by field: marshalling the struct would first build
// encoding/json's field table of Report by reflection, in every worker,
// for the one line it writes.
func (r Report) line() ([]byte, error) {
	if r.Points == nil {
		r.Points = []string{}
	}
	b := []byte(`{"worker":`)
	b, err := appendJSON(b, r.Worker)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"points":`...)
	if b, err = appendJSON(b, r.Points); err != nil {
		return nil, err
	}
	for _, f := range []struct{ key, value string }{{"crashed_at", r.CrashedAt}, {"crash_kind", r.CrashKind}, {"error", r.Error}} {
		if f.value == "" {
			continue
		}
		b = append(b, `,"`+f.key+`":`...)
		if b, err = appendJSON(b, f.value); err != nil {
			return nil, err
		}
	}
	if len(r.Result) > 0 {
		b = append(b, `,"result":`...)
		if b, err = appendJSON(b, r.Result); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendJSON appends v as json.Marshal writes it.
func appendJSON(b []byte, v any) ([]byte, error) {
	e, err := json.Marshal(v)
	return append(b, e...), err
}

// Points is the crash-point API. Workers call Hit at every named point; the
// call records the point and, if the parent chose it, crashes immediately.
type Points struct {
	crashAt    string
	crashAfter int
	kind       string
	passed     []string
	exit       func(int)
	call       *Call
	// armed is a point something outside the worker's code crashes at
	// through Crash, such as a sync cut; onStop runs before any crash and
	// before an ACK with the connection open.
	armed  string
	onStop func()
}

// Hit marks that the worker reached the named point. If the parent chose
// this point, the worker reports and exits with ExitCrash at once: deferred
// functions do not run, open transactions are not rolled back and nothing is
// closed, exactly as when a process dies.
func (p *Points) Hit(name string) {
	p.passed = append(p.passed, name)
	if name != p.crashAt && (p.crashAfter == 0 || len(p.passed) != p.crashAfter) {
		return
	}
	p.crash(name)
}

// crash reports a crash at name and exits.
func (p *Points) crash(name string) {
	if p.onStop != nil {
		p.onStop()
	}
	p.call.write(Report{Worker: p.call.Name, Points: p.Passed(), CrashedAt: name, CrashKind: p.kind})
	p.exit(ExitCrash)
}

// Arm names a point that code outside the worker will crash at with Crash,
// such as the fault VFS's sync cut. Until it fires, Finish treats it as a
// chosen point never reached.
func (p *Points) Arm(name string) { p.armed = name }

// Crash passes the armed point and crashes there, as Hit does for a chosen
// one.
func (p *Points) Crash() {
	name := p.armed
	p.armed = ""
	p.passed = append(p.passed, name)
	p.crash(name)
}

// OnStop sets a function that runs whenever the process is about to stop
// without its own cleanup, at a crash or an ACK with the connection open,
// before the report.
func (p *Points) OnStop(fn func()) { p.onStop = fn }

// SetKind sets the crash kind the report echoes. Empty keeps reports as
// they were before kinds existed; an unknown kind is an error, so a typo in
// the parent cannot silently run a plain kill.
func (p *Points) SetKind(kind string) error {
	switch kind {
	case "", CrashKindKill, CrashKindPower:
		p.kind = kind
		return nil
	}
	return fmt.Errorf("unknown crash kind %q (known: %q, %q)", kind, CrashKindKill, CrashKindPower)
}

// CrashAfterHits makes the k-th Hit crash; 0 turns it off. The worker
// dispatcher sets it from EnvCrashAfterHits.
func (p *Points) CrashAfterHits(k int) { p.crashAfter = k }

// Passed returns a copy of the points passed so far, in order.
func (p *Points) Passed() []string {
	return append([]string{}, p.passed...)
}

// ParseReport reads the single JSON line a worker writes.
func ParseReport(stdout string) (Report, error) {
	var rep Report
	line := strings.TrimRight(stdout, "\n")
	if line == "" {
		return rep, errors.New("no report line on stdout")
	}
	if strings.Contains(line, "\n") {
		return rep, fmt.Errorf("%d lines on stdout, want exactly one report line", strings.Count(line, "\n")+1)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return rep, fmt.Errorf("parse report line: %w", err)
	}
	if rep.Worker == "" {
		return rep, errors.New("report line has no worker name")
	}
	return rep, nil
}
