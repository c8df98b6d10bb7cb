package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/worker/protocol"
)

// Spec describes one child process.
type Spec struct {
	// Scenario, Condition and Label say where the process belongs; they are
	// copied into its record.
	Scenario  string
	Condition string
	Label     string
	// Worker is the registry name and Args its arguments.
	Worker string
	Args   []string
	// Env holds the variables the harness sets; they are recorded.
	Env map[string]string
	// CrashAt selects a crash point by name; empty means none.
	CrashAt string
	// Exits lists the exit codes the caller accepts. Nil means ACK and
	// crash: 0 and 17.
	Exits []int
	// KillAfter, when positive, sends SIGKILL after that delay. A process
	// killed this way is an accepted outcome, not a breach.
	KillAfter time.Duration
	// Stdin is the child's standard input; nil means none. A pipe here is
	// how racing workers wait behind a barrier.
	Stdin io.Reader
	// ExtraFiles are inherited as file descriptors 3, 4, ...; racing
	// workers signal readiness on one.
	ExtraFiles []*os.File
}

// Proc is a finished child: its record and its parsed report.
type Proc struct {
	Record results.ProcessRecord
	// Report is the child's report; empty when it printed none that
	// parses, or died from a signal.
	Report protocol.Report
	// Breach says how the child broke the protocol, in a reader's words;
	// empty when it kept it. It is not an error of the run, and a
	// scenario goes on past it: the fold judges the child from its record
	// and says the same in its finding.
	Breach string
}

// Runner spawns workers by re-executing the harness binary.
type Runner struct {
	// Executable is the harness binary; tests point it at the test binary.
	Executable string
	Recorder   *results.Recorder
	// OnProcess, when set, is called with each child's record once it is
	// recorded; the command line uses it to show progress.
	OnProcess func(results.ProcessRecord)
}

// Handle is a started child.
type Handle struct {
	ctx   context.Context
	r     *Runner
	spec  Spec
	cmd   *exec.Cmd
	g     *group
	out   bytes.Buffer
	errb  bytes.Buffer
	start time.Time
	timer *time.Timer
	// mu orders a kill with the wait: killed is set only by a kill sent
	// before done was closed.
	mu     sync.Mutex
	killed bool
	done   chan struct{}
}

// Run starts the child and waits for it.
func (r *Runner) Run(ctx context.Context, s Spec) (*Proc, error) {
	h, err := r.Start(ctx, s)
	if err != nil {
		return nil, err
	}
	return h.Wait()
}

// RunUntil runs s's child until it ends or stop delivers. When the child
// ends first, it returns the child and no wait. When stop comes first, it
// sends the child SIGKILL (Kill, recorded as killed by the harness) and
// returns at once, with no Proc and a wait that gives the child once it
// has ended: a child held in a request no signal ends (an fsync a frozen
// FUSE mount holds) ends only when that request does.
func RunUntil[T any](ctx context.Context, r *Runner, s Spec, stop <-chan T) (p *Proc, wait func() (*Proc, error), err error) {
	h, err := r.Start(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	type ended struct {
		p   *Proc
		err error
	}
	done := make(chan ended, 1)
	go func() {
		p, err := h.Wait()
		done <- ended{p, err}
	}()
	select {
	case e := <-done:
		return e.p, nil, e.err
	case <-stop:
		h.Kill()
		return nil, func() (*Proc, error) { e := <-done; return e.p, e.err }, nil
	}
}

// Start starts the child without waiting.
func (r *Runner) Start(ctx context.Context, s Spec) (*Handle, error) {
	argv := append([]string{r.Executable, "worker", s.Worker}, s.Args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	env := map[string]string{}
	for k, v := range s.Env {
		env[k] = v
	}
	if s.CrashAt != "" {
		env[protocol.EnvCrashAt] = s.CrashAt
	}
	s.Env = env
	cmd.Env = childEnv(env)
	h := &Handle{ctx: ctx, r: r, spec: s, cmd: cmd, done: make(chan struct{})}
	cmd.Stdin = s.Stdin
	cmd.ExtraFiles = s.ExtraFiles
	h.start = time.Now()
	g, err := startGroup(cmd, &h.out, &h.errb)
	if err != nil {
		return nil, fmt.Errorf("%w: start worker %s: %w", errclass.ErrHarness, s.Worker, err)
	}
	h.g = g
	if s.KillAfter > 0 {
		h.timer = time.AfterFunc(s.KillAfter, h.kill)
	}
	return h, nil
}

// kill sends SIGKILL to the child's group unless the child was already
// waited for.
func (h *Handle) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
	default:
		h.killed = true
		h.g.kill()
	}
}

// childEnv is the parent's environment without any inherited harness
// variable, plus the ones this spawn sets.
func childEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "IDEMLAB_") {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}

// Wait waits for the child and records it. Whatever the child did is a
// result: a signal the harness did not send, an exit code outside
// Spec.Exits, no or a bad report line, a crash at another point than the
// one chosen. Wait returns such a process with no error and says what it
// broke in Proc.Breach; the scenario records its observation as usual, and
// the fold judges the process from its record. The error is only for the
// harness's own faults: it could not wait for the child or record it, or
// the context ended (kept in the chain, so errors.Is(err,
// context.Canceled) holds).
func (h *Handle) Wait() (*Proc, error) {
	werr, left := h.g.wait()
	h.mu.Lock()
	close(h.done)
	killed := h.killed
	h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
	}
	s := h.spec
	started, ended, ms := window(h.start, time.Now())
	rec := results.ProcessRecord{
		Scenario: s.Scenario, Condition: s.Condition, Label: s.Label, Worker: s.Worker,
		Argv: h.cmd.Args, Env: s.Env, PID: h.cmd.Process.Pid,
		StartedAt: started, EndedAt: ended, DurationMS: ms,
		Stdout: h.out.String(), Stderr: h.errb.String(),
		ExecutableSHA256: h.r.Recorder.ExecutableSHA256(h.cmd.Dir, h.cmd.Path),
	}
	if rec.Argv == nil {
		rec.Argv = []string{}
	}
	st, _ := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case h.cmd.ProcessState == nil:
		rec.ExitCode = -1
	case st.Signaled():
		rec.ExitCode = -1
		rec.Signal = st.Signal().String()
	default:
		rec.ExitCode = h.cmd.ProcessState.ExitCode()
	}
	if killed {
		rec.KilledBy = "harness"
	} else if h.ctx.Err() == nil {
		// What the harness's kill of the group reached is not the
		// worker's doing; what outlived a leader that ended by itself is.
		rec.Lingered = lingered(rec.PID, left)
	}
	if h.r.Recorder != nil {
		if err := h.r.Recorder.AppendProcess(&rec); err != nil {
			return nil, fmt.Errorf("%w: record process: %w", errclass.ErrHarness, err)
		}
	}
	if h.r.OnProcess != nil {
		h.r.OnProcess(rec)
	}
	p := &Proc{Record: rec}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return p, fmt.Errorf("%w: wait for worker %s: %w", errclass.ErrHarness, s.Worker, werr)
	}
	if killed && rec.Signal != "" {
		return p, nil
	}
	if err := h.ctx.Err(); err != nil {
		return p, fmt.Errorf("%w: worker %s (process %d) stopped: %w", errclass.ErrHarness, s.Worker, rec.ID, err)
	}
	p.Report, p.Breach = judge(s, rec)
	return p, nil
}

// judge parses a finished child's report and says what, if anything, it
// broke of the protocol. A child that died from a signal has no report,
// as the folds read it: whatever it printed before is not its last word.
func judge(s Spec, rec results.ProcessRecord) (protocol.Report, string) {
	var rep protocol.Report
	if rec.Signal != "" {
		return rep, protocol.Ending(rec.ExitCode, rec.Signal, rec.Stderr)
	}
	exits := s.Exits
	if exits == nil {
		exits = []int{protocol.ExitACK, protocol.ExitCrash}
	}
	var breaches []string
	if !containsInt(exits, rec.ExitCode) {
		breaches = append(breaches, fmt.Sprintf("%s, want one of %v", protocol.Ending(rec.ExitCode, "", rec.Stderr), exits))
	}
	rep, err := protocol.ParseReport(rec.Stdout)
	if err != nil {
		return protocol.Report{}, strings.Join(append(breaches, err.Error()), "; ")
	}
	if k, _ := protocol.ParseCrashAfterHits(s.Env[protocol.EnvCrashAfterHits]); k > 0 {
		if rec.ExitCode == protocol.ExitCrash && (len(rep.Points) != k || rep.CrashedAt != rep.Points[k-1]) {
			breaches = append(breaches, fmt.Sprintf("exited %d at point %q after %d hits, but a crash at hit %d was chosen", protocol.ExitCrash, rep.CrashedAt, len(rep.Points), k))
		}
	} else if cut, _ := protocol.ParseSyncCut(s.Env[protocol.EnvCutAtSync]); cut.N > 0 {
		// A cut inside a sync is chosen by its number, and the worker
		// reports it under its point's name.
		if rec.ExitCode == protocol.ExitCrash && rep.CrashedAt != cut.Point() {
			breaches = append(breaches, fmt.Sprintf("exited %d at point %q, but a cut at %q was chosen", protocol.ExitCrash, rep.CrashedAt, cut.Point()))
		}
	} else if rec.ExitCode == protocol.ExitCrash && rep.CrashedAt != s.CrashAt {
		breaches = append(breaches, fmt.Sprintf("exited %d at point %q, but point %q was chosen", protocol.ExitCrash, rep.CrashedAt, s.CrashAt))
	}
	return rep, strings.Join(breaches, "; ")
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Kill sends SIGKILL to the child's group, as KillAfter does, unless the
// child was already waited for: a process the harness killed this way is
// an accepted outcome, recorded as killed by the harness.
func (h *Handle) Kill() { h.kill() }
