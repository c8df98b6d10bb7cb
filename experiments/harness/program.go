package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
)

// ProgramWorker is the worker name a user's program is recorded under.
const ProgramWorker = "program"

// ServerWorker is the worker name of a database server the harness
// records (the postmaster a PostgreSQL power cut ends): an executable of
// its own, as a program's is, not the run's.
const ServerWorker = "postgres"

// External says whether a process line of worker ran an executable other
// than the run's own: a user's program or a database server.
func External(worker string) bool { return worker == ProgramWorker || worker == ServerWorker }

// ProgramPointsFD is the descriptor on which a program finds its end of the
// points socket: the first inherited extra file.
const ProgramPointsFD = 3

// OutputCap bounds each of a program's stdout and stderr in the records.
const OutputCap = 64 << 10

// Program is a user's own handler program run as a worker. Unlike the
// harness's own workers it writes no report: what the parent records of it
// is what it witnessed, the exit status, the output and the points the
// program announced on its socket.
type Program struct {
	Scenario, Condition, Label string
	// Argv is the command, run without a shell in Dir.
	Argv []string
	Dir  string
	// Env holds the variables the harness sets; they are recorded.
	Env map[string]string
	// Timeout kills a program still running then.
	Timeout time.Duration
	// KillAfter, when positive, kills the program after that delay.
	KillAfter time.Duration
	// KillAfterFirst, when positive, kills the program that long after
	// its first point arrived, so a delay kill lands in the handler's
	// work, not in its interpreter's start-up; a program that announces
	// no point is not killed by it.
	KillAfterFirst time.Duration
	// KillAt says whether the program dies at an announced point: it is
	// called with the point's name (NAME#2 for a second announcement) and
	// the count of points so far, and a true answer is a SIGKILL while the
	// program waits for its answer.
	KillAt func(name string, n int) bool
	// KillOn, when set, kills the program when it receives or is closed:
	// a cut the parent learns of outside the program's points socket,
	// such as a power-loss mount frozen at a sync.
	KillOn <-chan struct{}
	// Gate, when set, holds a first point named "ready" until it is
	// released, which is how concurrent deliveries start together.
	Gate *Gate
	// DieWithParent kills the program (its leader) with SIGKILL when the
	// process that runs it dies: a broker's consumer killed by its own
	// parent takes its program with it.
	DieWithParent bool
}

// ProgramRun is a finished program, as the parent saw it.
type ProgramRun struct {
	Record results.ProcessRecord
	// Points are the points announced, in order, and PointsUS when each
	// arrived, in microseconds from the start (the clock of the record's
	// duration).
	Points   []string
	PointsUS []int64
	// KilledAt is the point at which the parent killed it.
	KilledAt string
	// Stray are lines on the socket that were not "point NAME".
	Stray []string
	// TimedOut says the program ran past its timeout and was killed.
	TimedOut bool
	// SocketCut counts the bytes of text, newlines aside, the program
	// sent on its points socket that were not kept, past the caps on a
	// line, on its stray text and on its point names.
	SocketCut int64
}

// Gate releases a group of programs at once: each arrives at its "ready"
// point, or by exiting before it, and all go when the last has arrived.
type Gate struct {
	mu      sync.Mutex
	want, n int
	open    chan struct{}
}

// NewGate is a gate for n programs.
func NewGate(n int) *Gate { return &Gate{want: n, open: make(chan struct{})} }

func (g *Gate) arrive() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if g.n == g.want {
		close(g.open)
	}
}

// ErrCannotStart marks a program that could not be started at all: not
// found, not executable, or exit 126 or 127 from its interpreter.
var ErrCannotStart = errors.New("the program cannot start")

// RunProgram runs a user's program and waits for it. Errors are the
// harness's own, and ErrCannotStart; whatever the program does is in the
// ProgramRun.
func (r *Runner) RunProgram(ctx context.Context, p Program) (*ProgramRun, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: points socket: %w", errclass.ErrHarness, err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "points"), os.NewFile(uintptr(fds[1]), "points-child")
	// The parent's end is a net.Conn on the poller, so closing it wakes a
	// read that waits on it: no read outlives the program's group.
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("%w: points socket: %w", errclass.ErrHarness, err)
	}
	defer conn.Close()
	cmd := exec.CommandContext(ctx, p.Argv[0], p.Argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = childEnv(p.Env)
	out, errb := &capped{}, &capped{}
	cmd.ExtraFiles = []*os.File{theirs}
	if p.DieWithParent {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	run := &ProgramRun{}
	start := time.Now()
	g, err := startGroup(cmd, out, errb)
	theirs.Close()
	if err != nil {
		if p.Gate != nil {
			p.Gate.arrive()
		}
		return nil, fmt.Errorf("%w: %q: %w", ErrCannotStart, p.Argv, err)
	}
	k := &killer{g: g}
	stopTimers := k.arm(p.Timeout, p.KillAfter)
	if p.KillOn != nil {
		ended := make(chan struct{})
		defer close(ended)
		go func() {
			select {
			case <-p.KillOn:
				k.kill("cut")
			case <-ended:
			}
		}()
	}
	first := &laterKill{}
	points := make(chan struct{})
	go func() {
		defer close(points)
		r.converse(conn, p, run, k, start, first)
	}()
	werr, left := g.wait()
	k.end()
	stopTimers()
	first.stop()
	conn.Close()
	<-points
	started, ended, ms := window(start, time.Now())
	run.TimedOut = k.reason() == "timeout"
	run.Record = results.ProcessRecord{
		Scenario: p.Scenario, Condition: p.Condition, Label: p.Label, Worker: ProgramWorker,
		Argv: append([]string{}, p.Argv...), Env: p.Env, PID: cmd.Process.Pid,
		StartedAt: started, EndedAt: ended, DurationMS: ms,
		Stdout: out.String(), Stderr: errb.String(),
		ExecutableSHA256: r.Recorder.ExecutableSHA256(cmd.Dir, cmd.Path),
	}
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case st.Signaled():
		run.Record.ExitCode, run.Record.Signal = -1, st.Signal().String()
	default:
		run.Record.ExitCode = cmd.ProcessState.ExitCode()
	}
	if k.reason() != "" {
		run.Record.KilledBy = "harness"
	} else if ctx.Err() == nil {
		run.Record.Lingered = lingered(run.Record.PID, left)
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return nil, fmt.Errorf("%w: wait for %q: %w", errclass.ErrHarness, p.Argv, werr)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %q stopped: %w", errclass.ErrHarness, p.Argv, err)
	}
	if r.Recorder != nil {
		if err := r.Recorder.AppendProcess(&run.Record); err != nil {
			return nil, fmt.Errorf("%w: record process: %w", errclass.ErrHarness, err)
		}
	}
	if r.OnProcess != nil {
		r.OnProcess(run.Record)
	}
	return run, nil
}

// The points socket is bounded as stdout and stderr are: a line is kept
// up to SocketLineCap bytes (a longer point keeps its name cut there), a
// process's stray lines up to StrayCap bytes in all, and its point names
// up to PointsCap bytes in all; past that the harness still answers
// points, but no longer keeps or kills at them. Whatever is not kept is
// counted in ProgramRun.SocketCut, which is a finding on the trial, and
// the harness's memory stays bounded whatever the program sends.
const (
	SocketLineCap = OutputCap
	StrayCap      = OutputCap
	PointsCap     = 4 * OutputCap
)

// converse answers the program's points until it closes its end or dies.
func (r *Runner) converse(sock net.Conn, p Program, run *ProgramRun, k *killer, start time.Time, first *laterKill) {
	arrived := false
	defer func() {
		if p.Gate != nil && !arrived {
			p.Gate.arrive()
		}
	}()
	seen := map[string]int{}
	rd := bufio.NewReaderSize(sock, SocketLineCap+1)
	kept, stray := 0, 0
	for {
		line, cut, ended := readCapped(rd)
		run.SocketCut += cut
		if !ended {
			// A last line with no newline is not a point.
			if line != "" || cut > 0 {
				run.addStray(line, cut, &stray)
			}
			return
		}
		name, ok := strings.CutPrefix(line, "point ")
		if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t") {
			run.addStray(line, cut, &stray)
			continue
		}
		if kept += len(name); kept > PointsCap {
			run.SocketCut += int64(len(name))
		} else {
			seen[name]++
			if seen[name] > 1 {
				name = fmt.Sprintf("%s#%d", name, seen[name])
			}
			run.Points = append(run.Points, name)
			run.PointsUS = append(run.PointsUS, time.Since(start).Microseconds())
			if len(run.Points) == 1 && p.KillAfterFirst > 0 {
				first.arm(p.KillAfterFirst, func() { k.kill("delay") })
			}
			if len(run.Points) == 1 && name == "ready" && p.Gate != nil {
				arrived = true
				p.Gate.arrive()
				<-p.Gate.open
			}
			if p.KillAt != nil && p.KillAt(name, len(run.Points)) {
				run.KilledAt = name
				k.kill("point")
				return
			}
		}
		if _, err := sock.Write([]byte("go\n")); err != nil {
			return
		}
	}
}

// readCapped reads one line, keeping at most SocketLineCap bytes of it
// and counting the rest in cut. ended says it ended with a newline,
// which is not kept; a line that did not is what was read before the
// error (the program closed its end, or the parent did).
func readCapped(rd *bufio.Reader) (line string, cut int64, ended bool) {
	b, err := rd.ReadSlice('\n')
	line = string(b)
	if errors.Is(err, bufio.ErrBufferFull) {
		cut, line = int64(len(line)-SocketLineCap), line[:SocketLineCap]
	}
	for errors.Is(err, bufio.ErrBufferFull) {
		b, err = rd.ReadSlice('\n')
		cut += int64(len(b))
	}
	switch {
	case err != nil:
		return line, cut, false
	case cut > 0:
		return line, cut - 1, true
	}
	return strings.TrimSuffix(line, "\n"), 0, true
}

// addStray keeps a stray line within StrayCap bytes of stray text in all,
// marking a line cut, here or at SocketLineCap (cut bytes), where it was
// cut; stray counts the bytes kept so far.
func (run *ProgramRun) addStray(line string, cut int64, stray *int) {
	room := StrayCap - *stray
	if room <= 0 {
		run.SocketCut += int64(len(line))
		return
	}
	if len(line) > room {
		cut += int64(len(line) - room)
		run.SocketCut += int64(len(line) - room)
		line = line[:room]
	}
	*stray += len(line)
	if cut > 0 {
		line += fmt.Sprintf("[idemlab: line cut after %d bytes; %d more bytes not kept]", len(line), cut)
	}
	run.Stray = append(run.Stray, line)
}

// killer kills a program's group once, remembering why.
type killer struct {
	mu    sync.Mutex
	g     *group
	why   string
	ended bool
}

func (k *killer) kill(why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.why == "" && !k.ended {
		k.why = why
		k.g.kill()
	}
}

// end says the group is gone: a later kill is too late to be one.
func (k *killer) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ended = true
}

func (k *killer) reason() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

// arm starts the timeout and the delayed kill; the returned function stops
// both once the program has exited.
func (k *killer) arm(timeout, after time.Duration) func() {
	var timers []*time.Timer
	if timeout > 0 {
		timers = append(timers, time.AfterFunc(timeout, func() { k.kill("timeout") }))
	}
	if after > 0 {
		timers = append(timers, time.AfterFunc(after, func() { k.kill("delay") }))
	}
	return func() {
		for _, t := range timers {
			t.Stop()
		}
	}
}

// laterKill is a kill armed while the program runs (at its first point);
// stop, once the program has exited, disarms it and any arm after it.
type laterKill struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (l *laterKill) arm(d time.Duration, kill func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t = time.AfterFunc(d, kill)
	}
}

func (l *laterKill) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.t != nil {
		l.t.Stop()
	}
}

// capped keeps the first OutputCap bytes written to it and says how many
// more were cut.
type capped struct {
	mu  sync.Mutex
	b   []byte
	cut int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := OutputCap - len(c.b)
	if room >= len(p) {
		c.b = append(c.b, p...)
	} else {
		c.b = append(c.b, p[:max(room, 0)]...)
		c.cut += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut == 0 {
		return string(c.b)
	}
	return string(c.b) + fmt.Sprintf("\n[idemlab: output cut at %d bytes; %d more bytes not kept]\n", OutputCap, c.cut)
}
