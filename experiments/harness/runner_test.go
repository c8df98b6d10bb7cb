package harness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// misbehave holds test-only workers that break the protocol in the ways a
// real child could. They exist only in this test binary.
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
}

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == worker.Arg {
		if fn, ok := misbehave[os.Args[2]]; ok {
			os.Exit(fn())
		}
	}
	worker.TestMain(m)
}

func TestRunnerRejectsProtocolBreaks(t *testing.T) {
	tests := []struct {
		worker string
		spec   harness.Spec
		want   string
	}{
		{"test.exit5", harness.Spec{}, "exited 5"},
		{"test.garbage", harness.Spec{}, "parse report line"},
		{"test.silent", harness.Spec{}, "no report line"},
		{"test.twolines", harness.Spec{}, "2 lines on stdout"},
		{"test.selfkill", harness.Spec{}, "died from signal killed"},
		{"test.wrongcrash", harness.Spec{CrashAt: "y"}, `point "y" was chosen`},
		{"no.such.worker", harness.Spec{}, "exited 2"},
	}
	for _, tt := range tests {
		t.Run(tt.worker, func(t *testing.T) {
			env := harnesstest.New(t)
			spec := tt.spec
			spec.Worker = tt.worker
			p, err := env.Runner.Run(context.Background(), spec)
			if !errors.Is(err, errclass.ErrHarness) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a harness failure containing %q", err, tt.want)
			}
			if p == nil || p.Record.ID == 0 {
				t.Fatalf("process not recorded: %+v", p)
			}
			if n := len(env.Lines(t, results.ProcessesFile)); n != 1 {
				t.Errorf("%d process records, want 1", n)
			}
		})
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
