package harness_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
)

// Test workers of the pool and the barrier; each misbehaving one breaks
// the round in one way a real worker could.
func init() {
	misbehave["test.member"] = poolMember
	misbehave["test.racer"] = func() int { return racer(true) }
	misbehave["test.racer.mute"] = func() int { return racer(false) }
	misbehave["test.racer.early"] = func() int {
		fmt.Fprintln(os.Stderr, "test.racer.early: gave up before the barrier")
		return 3
	}
}

// poolMember answers "ready LINE" and "done LINE" for each request line.
// With the argument -die it exits 3 on its first request instead.
func poolMember() int {
	answers := os.NewFile(harness.PoolAnswerFD, "answers")
	release := os.NewFile(harness.PoolReleaseFD, "release")
	die := slices.Contains(os.Args, "-die")
	sc := bufio.NewScanner(os.Stdin)
	n := 0
	for sc.Scan() {
		if die {
			fmt.Fprintln(os.Stderr, "test.member: died on its first request")
			return 3
		}
		fmt.Fprintf(answers, "ready %s\n", sc.Text())
		if _, err := io.ReadFull(release, make([]byte, 1)); err != nil {
			return 3
		}
		fmt.Fprintf(answers, "done %s\n", sc.Text())
		n++
	}
	fmt.Printf(`{"worker":"test.member","points":[],"result":%d}`+"\n", n)
	return 0
}

// racer says it is ready (unless mute), waits for the release and
// reports.
func racer(ready bool) int {
	if ready {
		os.NewFile(harness.BarrierReadyFD, "ready").Write([]byte{1})
	}
	io.Copy(io.Discard, os.Stdin)
	fmt.Println(`{"worker":"` + os.Args[2] + `","points":[]}`)
	return 0
}

// TestPoolMemberDies shows a member that dies mid-round: the others are
// still released and answer done, the error names the member and is not
// a harness failure, the pool stays broken, and Close records every
// member with no error.
func TestPoolMemberDies(t *testing.T) {
	env := harnesstest.New(t)
	pool, err := env.Runner.StartPool(context.Background(), harness.PoolSpec{
		Worker: "test.member", Size: 3,
		Label: func(i int) string { return fmt.Sprintf("m%d", i) },
		Args: func(i int) []string {
			if i == 1 {
				return []string{"-die"}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := pool.Race([]int{0, 1, 2}, []string{"r1", "r1", "r1"})
	var me *harness.MemberError
	if !errors.As(err, &me) || me.Member != 1 || me.Label != "m1" || errors.Is(err, errclass.ErrHarness) {
		t.Fatalf("err = %v, want member m1's failure, not a harness failure", err)
	}
	if want := []string{"ready r1", "", "ready r1"}; !slices.Equal(rd.Ready, want) || !slices.Equal(rd.Done, []string{"done r1", "", "done r1"}) {
		t.Errorf("round %+v, want the live members' answers in place", rd)
	}
	if _, again := pool.Race([]int{0}, []string{"r2"}); !errors.Is(again, err) {
		t.Errorf("a race after the failure: %v, want the same failure", again)
	}
	procs, err := pool.Close()
	if err != nil {
		t.Fatalf("close: %v, want no error: a member that died is a result", err)
	}
	for i, p := range procs {
		dead := i == 1
		if got := p.Record.ExitCode != 0; got != dead || (p.Breach != "") != dead {
			t.Errorf("member %d: exit %d, breach %q; dead %v", i, p.Record.ExitCode, p.Breach, dead)
		}
	}
	if !strings.Contains(procs[1].Breach, "exited 3 (worker error): test.member: died on its first request") {
		t.Errorf("breach %q does not quote the member's last words", procs[1].Breach)
	}
}

// TestBarrierRacerExitsEarly shows a racer that exits before the release:
// the round goes on, between still runs, and every racer is recorded and
// returned with no error.
func TestBarrierRacerExitsEarly(t *testing.T) {
	for _, second := range []string{"test.racer.early", "test.racer.mute"} {
		t.Run(second, func(t *testing.T) {
			env := harnesstest.New(t)
			racers := []harness.Racer{{Spec: harness.Spec{Worker: "test.racer"}}, {Spec: harness.Spec{Worker: second}}}
			if second == "test.racer.mute" {
				// A mute racer never says it is ready; the early one in
				// front of it ends the wait instead of the timeout.
				racers = append(racers, harness.Racer{Spec: harness.Spec{Worker: "test.racer.early"}})
			}
			calls := 0
			procs, err := harness.RunBarrierThen(context.Background(), env.Runner, racers, func() error { calls++; return nil })
			if err != nil {
				t.Fatalf("err = %v, want none: a racer that exits early is a result", err)
			}
			if len(procs) != len(racers) || calls != 1 {
				t.Fatalf("%d processes, between called %d times; want %d and once", len(procs), calls, len(racers))
			}
			for i, p := range procs {
				early := racers[i].Spec.Worker == "test.racer.early"
				if (p.Record.ExitCode == 3) != early || (p.Breach != "") != early {
					t.Errorf("racer %d (%s): exit %d, breach %q", i, racers[i].Spec.Worker, p.Record.ExitCode, p.Breach)
				}
			}
			if n := len(env.Lines(t, "raw-processes.jsonl")); n != len(racers) {
				t.Errorf("%d records, want %d", n, len(racers))
			}
		})
	}
}

// TestBarrierCancelled shows that a cancelled barrier round is the
// harness's own failure, with the context's error in the chain, whether
// the cancel lands before a racer starts or while the parent waits for a
// racer that never says it is ready.
func TestBarrierCancelled(t *testing.T) {
	env := harnesstest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	_, err := harness.RunBarrier(ctx, env.Runner, []harness.Racer{{Spec: harness.Spec{Worker: "test.racer.mute"}}})
	if !errors.Is(err, errclass.ErrHarness) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a harness failure for which errors.Is(err, context.Canceled) holds", err)
	}
}
