// Package worker is the child side of the harness. The parent re-executes
// its own binary as "<exe> worker NAME ARGS..."; Dispatch looks NAME up in
// one strict registry and runs it.
package worker

import (
	"fmt"
	"io"
	"os"
	"sort"

	"idemlab/worker/batch"
	"idemlab/worker/claim"
	"idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	"idemlab/worker/pattern"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
	"idemlab/worker/redelivery"
)

// Arg is the first argument that switches the binary into worker mode.
const Arg = "worker"

// Func runs one worker call and returns the process exit code.
type Func func(call *protocol.Call) int

// registry maps every worker name to its function. Names are
// "scenario.role" so the argv in raw-processes.jsonl reads plainly.
var registry = map[string]Func{
	redelivery.WorkerName: redelivery.Main,
	claim.RaceWorker:      claim.RaceMain,
	claim.PoolWorker:      claim.PoolMain,
	claim.BenchWorker:     claim.BenchMain,
	batch.WorkerRun:       batch.RunMain,
	batch.WorkerResolve:   batch.ResolveMain,
	explore.RacerName:     explore.RaceMain,
	explore.ClaimName:     explore.ClaimMain,
	explore.LeaseName:     explore.LeaseMain,
	pattern.WorkerName:    pattern.Main,
	powerfs.WorkerName:    powerfs.Main,

	// --broker nats: the consumer that fetches from JetStream, and the
	// publisher that records its publish in an outbox row.
	redelivery.ConsumerName:  redelivery.ConsumeMain,
	redelivery.PublisherName: redelivery.PublishMain,
	pattern.ConsumerName:     pattern.ConsumeMain,
}

// Register adds a worker whose code lives above this package because it
// needs the harness itself: a handler program's consumer on a broker
// (pattern.ProgramConsumerName), which runs the user's program as the
// harness does, registered by experiments/subject/patternfile. Call it
// from that package's init; a name registered twice panics.
func Register(name string, fn Func) {
	if _, dup := registry[name]; dup || name == "" || fn == nil {
		panic(fmt.Sprintf("worker: cannot register %q twice, or without a name or function", name))
	}
	registry[name] = fn
}

// Names lists the registered workers, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Dispatch runs a worker if args (without the program name) start with Arg.
// ok is false when args are not a worker invocation.
func Dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int, ok bool) {
	return dispatch(args, stdin, stdout, stderr, nil)
}

// dispatch is Dispatch that runs replace[NAME], when there is one, instead
// of the registered worker: a test's broken variant.
func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer, replace map[string]Func) (code int, ok bool) {
	if len(args) == 0 || args[0] != Arg {
		return 0, false
	}
	if len(args) < 2 {
		fmt.Fprintln(stderr, "worker: missing worker name")
		return protocol.ExitUsage, true
	}
	call := protocol.NewCall(args[1], args[2:], stdin, stdout, stderr, os.Getenv(protocol.EnvCrashAt), nil)
	if err := call.Points.SetKind(os.Getenv(protocol.EnvCrashKind)); err != nil {
		return call.Usage(err), true
	}
	k, err := protocol.ParseCrashAfterHits(os.Getenv(protocol.EnvCrashAfterHits))
	if err != nil {
		return call.Usage(err), true
	}
	call.Points.CrashAfterHits(k)
	if err := armPowerFaults(call); err != nil {
		return call.Usage(err), true
	}
	if fn, ok := replace[call.Name]; ok {
		return fn(call), true
	}
	return RunCall(call), true
}

// armPowerFaults applies the environment that only the durability matrix
// sets: an ACK with the connection open, and a cut at the N-th sync. Every
// stop without cleanup (a crash, an ACK with the connection open) first
// publishes the fault VFS's pending write ranges, so its log holds every
// write a torn cut may keep: a process that holds its locks to the end, as
// locking_mode=EXCLUSIVE does, never published them otherwise.
func armPowerFaults(call *protocol.Call) error {
	call.SetAckOpen(os.Getenv(protocol.EnvAckOpen) == "1")
	call.Points.OnStop(func() { _ = faultvfs.PublishPending() })
	cut, err := protocol.ParseSyncCut(os.Getenv(protocol.EnvCutAtSync))
	if err != nil || cut.N == 0 {
		return err
	}
	call.Points.Arm(cut.Point())
	return faultvfs.ArmSyncCut(cut.N, cut.After, call.Points.Crash)
}

// Run runs the named worker. exit is how a crash ends the process; nil means
// os.Exit. An unknown name exits ExitUsage.
func Run(name string, args []string, stdin io.Reader, stdout, stderr io.Writer, crashAt string, exit func(int)) int {
	return RunCall(protocol.NewCall(name, args, stdin, stdout, stderr, crashAt, exit))
}

// RunCall runs a prepared call, whose crash settings the caller chose.
func RunCall(call *protocol.Call) int {
	fn, ok := registry[call.Name]
	if !ok {
		return call.Usage(fmt.Errorf("unknown worker %q (known: %v)", call.Name, Names()))
	}
	return fn(call)
}

// EnvBreak names, in a test binary only, the breakage a re-executed test
// binary applies: it runs the broken variants of workers that the test
// handed to TestMain instead of the registered ones. A test sets it with
// t.Setenv, and the children inherit it. It does not start with IDEMLAB_,
// so the harness passes it through like any inherited variable and records
// it nowhere: a breakage is the test's doing, never part of a run's spec,
// and a built idemlab binary, whose main does not call TestMain, ignores
// it.
const EnvBreak = "IDEMLABTEST_BREAK"

// Breaks are a test's broken workers: for each breakage, named by
// EnvBreak, the workers it replaces by registry name. Workers a breakage
// does not name run as registered.
type Breaks map[string]map[string]Func

// TestMain lets a test binary act as the harness binary: when it is
// re-executed as "<test binary> worker NAME ...", it runs the worker instead
// of the tests, or, when EnvBreak names one of breaks, that breakage's
// variant of it. An EnvBreak that names no breakage exits ExitUsage, so a
// typo cannot run the real workers in a test that expects broken ones.
// Call it from a package's TestMain.
//
// A program built with -race sleeps a second before it exits (GORACE's
// atexit_sleep_ms defaults to 1000), and the tests start thousands of
// workers, so unless GORACE is set the workers the tests start skip it.
func TestMain(m interface{ Run() int }, breaks ...Breaks) {
	if name := os.Getenv(EnvBreak); name != "" && len(os.Args) > 1 && os.Args[1] == Arg {
		replace, ok := lookupBreak(breaks, name)
		if !ok {
			fmt.Fprintf(os.Stderr, "worker: %s=%q names no breakage this test binary knows\n", EnvBreak, name)
			os.Exit(protocol.ExitUsage)
		}
		code, _ := dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, replace)
		os.Exit(code)
	}
	if code, ok := Dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	if _, set := os.LookupEnv("GORACE"); !set {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

func lookupBreak(breaks []Breaks, name string) (map[string]Func, bool) {
	for _, b := range breaks {
		if r, ok := b[name]; ok {
			return r, true
		}
	}
	return nil, false
}
