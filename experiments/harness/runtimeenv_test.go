package harness_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/worker"
	"idemlab/worker/protocol"
)

// runtimeBreaks holds test.runtime, a worker that goes through the real
// dispatch (which takes the harness's runtime setting back out of its
// environment) and reports on standard error its GOMAXPROCS and what its
// environment still holds, as a program it started would inherit it.
var runtimeBreaks = worker.Breaks{"runtime": {"test.runtime": func(call *protocol.Call) int {
	env, set := os.LookupEnv(protocol.EnvGOMAXPROCS)
	if !set {
		env = "(unset)"
	}
	_, mark := os.LookupEnv(protocol.EnvRuntimeSet)
	fmt.Fprintf(call.Stderr, "procs=%d GOMAXPROCS=%s mark=%t", runtime.GOMAXPROCS(0), env, mark)
	return call.Finish(nil, protocol.ExitACK)
}}}

// TestWorkerRuntimeEnv shows that the harness's workers run Go on one
// thread unless the parent's environment sets GOMAXPROCS, which they then
// inherit, and that a worker leaves its environment as the parent's: what
// it starts (a user's program, the FUSE server) is not held to one thread.
func TestWorkerRuntimeEnv(t *testing.T) {
	tests := []struct {
		name   string
		parent string // "" leaves GOMAXPROCS unset in the parent
		want   string
	}{
		{"parent leaves it unset", "", "procs=1 GOMAXPROCS=(unset) mark=false"},
		{"parent sets 3", "3", "procs=3 GOMAXPROCS=3 mark=false"},
		{"parent sets 1", "1", "procs=1 GOMAXPROCS=1 mark=false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(worker.EnvBreak, "runtime")
			t.Setenv(protocol.EnvGOMAXPROCS, tt.parent)
			if tt.parent == "" {
				os.Unsetenv(protocol.EnvGOMAXPROCS)
			}
			env := harnesstest.New(t)
			p, err := env.Runner.Run(context.Background(), harness.Spec{Worker: "test.runtime", Exits: []int{protocol.ExitACK}})
			if err != nil || p.Breach != "" {
				t.Fatalf("run: err %v, breach %q, stderr %q", err, p.Breach, p.Record.Stderr)
			}
			if diff := cmp.Diff(tt.want, p.Record.Stderr); diff != "" {
				t.Errorf("the worker's runtime and environment (-want +got):\n%s", diff)
			}
			if _, ok := p.Record.Env[protocol.EnvGOMAXPROCS]; ok {
				t.Errorf("record's env %v holds %s: the harness's own runtime setting is not a trial's", p.Record.Env, protocol.EnvGOMAXPROCS)
			}
		})
	}
}
