package harness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/worker"
	"idemlab/worker/protocol"
)

// misbehave holds test-only workers: most break the protocol in one of
// the ways a real child could, test.ok keeps it. They exist only in this
// test binary.
var misbehave = map[string]func() int{
	"test.exit5":   func() int { fmt.Println(`{"worker":"test.exit5","points":[]}`); return 5 },
	"test.garbage": func() int { fmt.Println("not json"); return 0 },
	"test.silent":  func() int { return 0 },
	"test.twolines": func() int {
		fmt.Println(`{"worker":"a","points":[]}`)
		fmt.Println(`{"worker":"a","points":[]}`)
		return 0
	},
	"test.selfkill": func() int { syscall.Kill(os.Getpid(), syscall.SIGKILL); time.Sleep(time.Second); return 0 },
	"test.sleep":    func() int { time.Sleep(10 * time.Second); return 0 },
	"test.wrongcrash": func() int {
		fmt.Println(`{"worker":"test.wrongcrash","points":["x"],"crashed_at":"x"}`)
		return protocol.ExitCrash
	},
	"test.panics": func() int { panic("broken on purpose") },
	"test.ok":     func() int { fmt.Println(`{"worker":"test.ok","points":[]}`); return 0 },
}

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == worker.Arg {
		if fn, ok := misbehave[os.Args[2]]; ok {
			os.Exit(fn())
		}
	}
	worker.TestMain(m)
}

// TestRunnerRecordsProtocolBreaks shows that whatever a worker does is a
// result: the process is recorded and returned with no error, and Breach
// says in a reader's words what it broke.
func TestRunnerRecordsProtocolBreaks(t *testing.T) {
	tests := []struct {
		worker string
		spec   harness.Spec
		want   string
	}{
		{"test.exit5", harness.Spec{}, "exited 5, want one of [0 17]"},
		{"test.garbage", harness.Spec{}, "parse report line"},
		{"test.silent", harness.Spec{}, "no report line"},
		{"test.twolines", harness.Spec{}, "2 lines on stdout"},
		{"test.selfkill", harness.Spec{}, "died from signal killed"},
		{"test.wrongcrash", harness.Spec{CrashAt: "y"}, `exited 17 at point "x", but point "y" was chosen`},
		{"test.panics", harness.Spec{}, "panicked (exit 2): broken on purpose"},
		{"no.such.worker", harness.Spec{}, `exited 2 (usage error): worker no.such.worker: unknown worker "no.such.worker"`},
	}
	for _, tt := range tests {
		t.Run(tt.worker, func(t *testing.T) {
			env := harnesstest.New(t)
			spec := tt.spec
			spec.Worker = tt.worker
			p, err := env.Runner.Run(context.Background(), spec)
			if err != nil {
				t.Fatalf("err = %v, want none: a misbehaving worker is a result", err)
			}
			if p.Record.ID == 0 || !strings.Contains(p.Breach, tt.want) {
				t.Fatalf("record %d, breach %q; want it recorded, the breach containing %q", p.Record.ID, p.Breach, tt.want)
			}
			if n := len(env.Lines(t, results.ProcessesFile)); n != 1 {
				t.Errorf("%d process records, want 1", n)
			}
		})
	}
}

// TestRunnerKeptProtocol shows that a worker that kept the protocol has
// no breach and its report parsed.
func TestRunnerKeptProtocol(t *testing.T) {
	env := harnesstest.New(t)
	p, err := env.Runner.Run(context.Background(), harness.Spec{Worker: "test.ok"})
	if err != nil || p.Breach != "" || p.Report.Worker != "test.ok" {
		t.Fatalf("err %v, breach %q, report %+v; want a clean process", err, p.Breach, p.Report)
	}
}

// TestRunnerHarnessFaults shows the errors that remain: the harness could
// not start a process, or the context ended, which stays in the chain.
func TestRunnerHarnessFaults(t *testing.T) {
	env := harnesstest.New(t)
	bad := &harness.Runner{Executable: filepath.Join(t.TempDir(), "missing"), Recorder: env.Recorder}
	if _, err := bad.Run(context.Background(), harness.Spec{Worker: "test.ok"}); !errors.Is(err, errclass.ErrHarness) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("start of a missing binary: err = %v, want a harness failure that keeps its cause", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := env.Runner.Start(ctx, harness.Spec{Worker: "test.sleep"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	p, err := h.Wait()
	if !errors.Is(err, errclass.ErrHarness) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want a harness failure for which errors.Is(err, context.Canceled) holds", err)
	}
	if p == nil || p.Record.Signal != "killed" {
		t.Errorf("cancelled process not recorded as killed: %+v", p)
	}
}

// TestKillAfter shows the runner's kill-after-delay: a process the harness
// killed on purpose is an accepted outcome, recorded with its signal.
func TestKillAfter(t *testing.T) {
	env := harnesstest.New(t)
	start := time.Now()
	p, err := env.Runner.Run(context.Background(), harness.Spec{Worker: "test.sleep", KillAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p.Record.Signal != "killed" || p.Record.KilledBy != "harness" {
		t.Errorf("record %+v, want signal killed by harness", p.Record)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("kill took %v", time.Since(start))
	}
}

func TestParseReport(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"worker":"w","points":[]}` + "\n", true},
		{`{"worker":"w","points":["a"],"crashed_at":"a"}`, true},
		{`{"worker":"w","points":[],"extra":1}`, false},
		{`{"points":[]}`, false},
		{``, false},
		{`{"worker":"w"`, false},
	}
	for _, tt := range tests {
		_, err := protocol.ParseReport(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseReport(%q) err = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

// TestRunUntil runs a child until it ends or a stop comes: a child that
// ends first is returned with no wait; one the stop catches is killed by
// the harness, and only the wait returns it, recorded with its signal.
func TestRunUntil(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	tests := []struct {
		worker   string
		stop     chan struct{}
		stopped  bool
		signal   string
		killedBy string
	}{
		{worker: "test.ok", stop: nil},
		{worker: "test.sleep", stop: closed, stopped: true, signal: "killed", killedBy: "harness"},
	}
	for _, tt := range tests {
		t.Run(tt.worker, func(t *testing.T) {
			env := harnesstest.New(t)
			p, wait, err := harness.RunUntil(context.Background(), env.Runner, harness.Spec{Worker: tt.worker}, tt.stop)
			if err != nil {
				t.Fatal(err)
			}
			if got := wait != nil; got != tt.stopped || (p == nil) != tt.stopped {
				t.Fatalf("stopped %v with a Proc %v; want stopped %v, and a Proc only when not stopped", got, p != nil, tt.stopped)
			}
			if tt.stopped {
				if p, err = wait(); err != nil {
					t.Fatal(err)
				}
			}
			if p.Record.Signal != tt.signal || p.Record.KilledBy != tt.killedBy {
				t.Errorf("record: signal %q killed by %q; want %q by %q", p.Record.Signal, p.Record.KilledBy, tt.signal, tt.killedBy)
			}
		})
	}
}
