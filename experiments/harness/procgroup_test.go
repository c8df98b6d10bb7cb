package harness_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
)

func init() {
	// test.forker starts a grandchild that would outlive it, says the
	// grandchild's pid, and waits to be killed.
	misbehave["test.forker"] = func() int {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			return 3
		}
		fmt.Printf("grandchild %d\n", c.Process.Pid)
		time.Sleep(time.Minute)
		return 0
	}
}

// assertGroupGone fails unless no live process is left of the group
// that pid led, nor any of the pids named, at once (no grace).
func assertGroupGone(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	if left := harness.GroupMembers(pgid); len(left) > 0 {
		t.Errorf("processes %v of group %d outlived it", left, pgid)
	}
	for _, pid := range pids {
		if harness.Alive(pid) {
			t.Errorf("process %d outlived its group %d", pid, pgid)
		}
	}
}

// pidsIn reads the pids a program wrote, one a line, into a file.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the program wrote no pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid %q: %v", f, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestWorkerKillEndsItsGroup: a kill of one of the harness's own workers
// (KillAfter) ends the grandchild it started too.
func TestWorkerKillEndsItsGroup(t *testing.T) {
	env := harnesstest.New(t)
	p, err := env.Runner.Run(context.Background(), harness.Spec{Worker: "test.forker", KillAfter: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var grandchild int
	if _, err := fmt.Sscanf(p.Record.Stdout, "grandchild %d", &grandchild); err != nil {
		t.Fatalf("stdout %q: %v", p.Record.Stdout, err)
	}
	if p.Record.KilledBy != "harness" || p.Record.Signal != "killed" {
		t.Errorf("record %+v, want killed by the harness", p.Record)
	}
	assertGroupGone(t, p.Record.PID, grandchild)
}

// TestProgramWrapperKilledAtPoint: a program whose handler is a grandchild
// of a shell wrapper is killed at its point, grandchild and all, so it
// writes nothing after its kill.
func TestProgramWrapperKilledAtPoint(t *testing.T) {
	dir := t.TempDir()
	inner := `echo $$ > pid; echo point p >&3; read a <&3; sleep 0.3; echo late > survived`
	r := &harness.Runner{}
	run, err := r.RunProgram(context.Background(), harness.Program{
		Argv: []string{"sh", "-c", "sh -c '" + inner + "'; exit $?"}, Dir: dir, Timeout: 10 * time.Second,
		KillAt: func(name string, _ int) bool { return name == "p" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.KilledAt != "p" || run.Record.KilledBy != "harness" {
		t.Fatalf("run %+v, want killed at p", run)
	}
	assertGroupGone(t, run.Record.PID, pidsIn(t, filepath.Join(dir, "pid"))...)
	time.Sleep(600 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "survived")); err == nil {
		t.Errorf("the handler wrote after its kill")
	}
}

// TestProgramHangs: each way a program held the harness past its timeout
// before now ends the run within it, and leaves nothing of its group.
func TestProgramHangs(t *testing.T) {
	// lingers names the command of the first pid the program writes when
	// its leader exits by itself while that process still runs: the record
	// names it, in the leader's group. Where the harness kills the group,
	// nothing is named.
	tests := []struct {
		name    string
		argv    []string
		exit    int
		lingers string
	}{
		// A grandchild keeps stdout open after the leader exits.
		{"grandchild holds stdout", []string{"sh", "-c", "sleep 600 & echo $! > pid; exit 0"}, 0, "sleep"},
		// A grandchild keeps stdout open and the leader hangs.
		{"grandchild holds stdout, leader hangs", []string{"sh", "-c", "sleep 600 & echo $! > pid; echo $$ >> pid; sleep 600"}, -1, ""},
		// `kill 0` reaches the program's own group, not the harness's.
		{"trap kill 0", []string{"sh", "-c", "trap 'kill 0' EXIT; sleep 600 & echo $! > pid; exit 0"}, -1, ""},
		// A grandchild waits on the points socket (and may have started
		// its sleep when the leader exits).
		{"grandchild waits on the socket", []string{"sh", "-c", "sh -c 'echo $$ > pid; echo point p >&3; read a <&3; sleep 600' & while [ ! -s pid ]; do sleep 0.01; done; exit 0"}, 0, "sh"},
		// A double fork: the grandchild's parent exits, and it lingers.
		{"double fork", []string{"sh", "-c", "(sleep 600 & echo $! > pid); exit 0"}, 0, "sleep"},
		// A child the leader waits for is gone before it exits.
		{"child waited for", []string{"sh", "-c", "sleep 0.01 & echo $! > pid; wait; exit 0"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			timeout := 2 * time.Second
			start := time.Now()
			run, err := (&harness.Runner{}).RunProgram(context.Background(), harness.Program{Argv: tt.argv, Dir: dir, Timeout: timeout})
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if limit := timeout + harness.GroupDrainTimeout; took > limit {
				t.Errorf("the run took %v, want at most %v", took, limit)
			}
			if run.Record.ExitCode != tt.exit {
				t.Errorf("exit %d, want %d", run.Record.ExitCode, tt.exit)
			}
			pids := pidsIn(t, filepath.Join(dir, "pid"))
			got := run.Record.Lingered
			switch {
			case tt.lingers == "" && got != nil:
				t.Errorf("lingered %+v, want nothing", got)
			case tt.lingers != "" && got == nil:
				t.Errorf("lingered: nothing, want %s (pid %d)", tt.lingers, pids[0])
			case tt.lingers != "":
				if got.Group != run.Record.PID {
					t.Errorf("lingered group %d, want the leader's, %d", got.Group, run.Record.PID)
				}
				// A forked shell may not have exec'd its command yet: its
				// name is then the shell's.
				if !slices.ContainsFunc(got.Processes, func(p results.LingeringProcess) bool {
					return p.PID == pids[0] && (p.Comm == tt.lingers || p.Comm == "sh")
				}) {
					t.Errorf("lingered %+v, want pid %d (%s) among them", got.Processes, pids[0], tt.lingers)
				}
			}
			assertGroupGone(t, run.Record.PID, pids...)
		})
	}
}

// TestProgramCancelled: a cancelled run kills the program's whole group.
func TestProgramCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := (&harness.Runner{}).RunProgram(ctx, harness.Program{
		Argv: []string{"sh", "-c", "sleep 600 & echo $! > pid; echo $$ >> pid; wait"}, Dir: dir, Timeout: time.Minute,
	})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err %v, want the cancellation", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the cancelled run took %v", took)
	}
	for _, pid := range pidsIn(t, filepath.Join(dir, "pid")) {
		if harness.Alive(pid) {
			t.Errorf("process %d outlived the cancelled run", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
