package claim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	wc "idemlab/worker/claim"
	"idemlab/worker/protocol"
)

// brokenMember is the pool member the dying and the garbling breakages
// break; the others run as registered.
const brokenMember = "pool-2"

// diesAt is the request on which the dying member dies.
const diesAt = 3

// breaks are deliberately broken pool members. They exist only in this
// test binary; a test chooses one with worker.EnvBreak.
var breaks = worker.Breaks{
	// Every statement counts as a win: the transcript says each claim
	// won, whatever its statement changed.
	"every-statement-wins": {wc.PoolWorker: everyStatementWins},
	// A member that dies on its diesAt-th request, without answering.
	"member-dies": {wc.PoolWorker: func(call *protocol.Call) int {
		if slices.Contains(call.Args, brokenMember) {
			call.Stdin = &dieOnRequest{r: bufio.NewReader(call.Stdin), n: diesAt}
		}
		return wc.PoolMain(call)
	}},
	// A member that answers garbage before its first ready.
	"garbage-answer": {wc.PoolWorker: func(call *protocol.Call) int {
		if slices.Contains(call.Args, brokenMember) {
			syscall.Write(3, []byte("not an answer\n"))
		}
		return wc.PoolMain(call)
	}},
}

// everyStatementWins runs the real member and rewrites its transcript so
// that every claim says it won.
func everyStatementWins(call *protocol.Call) int {
	var out bytes.Buffer
	stdout := call.Stdout
	call.Stdout = &out
	code := wc.PoolMain(call)
	rep, err := protocol.ParseReport(out.String())
	var res wc.PoolResult
	if err != nil || json.Unmarshal(rep.Result, &res) != nil {
		stdout.Write(out.Bytes())
		return code
	}
	for i := range res.Races {
		res.Races[i].Outcome.Won = true
	}
	rep.Result, _ = json.Marshal(res)
	b, _ := json.Marshal(rep)
	stdout.Write(append(b, '\n'))
	return code
}

// dieOnRequest passes request lines through and exits the process, as a
// crash would, when the n-th arrives.
type dieOnRequest struct {
	r    *bufio.Reader
	n    int
	seen int
	rest []byte
}

func (d *dieOnRequest) Read(p []byte) (int, error) {
	if len(d.rest) == 0 {
		line, err := d.r.ReadBytes('\n')
		if len(line) > 0 {
			d.seen++
			if d.seen == d.n {
				fmt.Fprintf(os.Stderr, "member %s: died on request %d\n", brokenMember, d.n)
				os.Exit(protocol.ExitWorkerError)
			}
		}
		if len(line) == 0 {
			return 0, err
		}
		d.rest = line
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

var _ io.Reader = (*dieOnRequest)(nil)

// TestMisbehavingMembers runs the scenario with each broken member, by
// real processes: the run records every member and goes on as far as the
// pool can, writes its folder with pass: false and exits 1, the race's
// condition fails with a finding that names what happened, and verify
// derives the same findings and exits 4.
func TestMisbehavingMembers(t *testing.T) {
	ov := map[string]string{"workers": "2", "repetitions": "1", "mutants": "false"}
	sec := section(t, smallInput(2, 1))
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: sec, Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	sched := Schedule(p.Settings().(Settings))
	tests := []struct {
		brk, cond, want string
		// scenario is a finding the scenario holds, about a member that
		// serves every condition.
		scenario string
	}{
		{brk: "every-statement-wins", cond: RoundCondition("1-fresh", wc.TTL), want: "race A: 2 racers reported a win, but count went 0 → 1; every win adds one"},
		{brk: "member-dies", cond: raceOf(t, sched, 1, diesAt).Condition, want: fmt.Sprintf("pool member %s: wait for ready: EOF; the run stopped at this race", brokenMember),
			scenario: fmt.Sprintf("%[1]s exited 3 (worker error): member %[1]s: died on request %[2]d; a member that served its races exits 0", brokenMember, diesAt)},
		{brk: "garbage-answer", cond: raceOf(t, sched, 1, 1).Condition, want: fmt.Sprintf(`member %s answered "not an answer" when the parent waited for ready`, brokenMember)},
	}
	input := fmt.Sprintf(`{"claim": %s}`, sec)
	for _, tt := range tests {
		t.Run(tt.brk, func(t *testing.T) {
			t.Setenv(worker.EnvBreak, tt.brk)
			res := scenariotest.RunFailing(t, scenario.Registry{New()}, input, ov)
			scenariotest.FailsWith(t, res, Name, tt.cond, tt.want)
			if tt.scenario == "" {
				return
			}
			var msgs []string
			for _, f := range res.Scenarios[0].Findings {
				msgs = append(msgs, f.Message)
			}
			if !slices.Contains(msgs, tt.scenario) {
				t.Errorf("the scenario's findings lack %q:\n%s", tt.scenario, strings.Join(msgs, "\n"))
			}
		})
	}
}

// raceOf is the slot of the n-th race that pool member i serves.
func raceOf(tb testing.TB, sched []Slot, i, n int) Slot {
	for _, s := range sched {
		if slices.Contains(Members(s.Seq, s.Racers, 2), i) {
			if n--; n == 0 {
				return s
			}
		}
	}
	tb.Fatalf("member %d serves fewer than %d races", i, n)
	return Slot{}
}
