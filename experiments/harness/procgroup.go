package harness

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"idemlab/experiments/procstat"
	"idemlab/experiments/results"
)

// Every worker, the harness's own and a user's program, runs in a process
// group of its own, led by the process the harness started. The group is
// the unit of a crash: a kill, a timeout or a cancelled run sends SIGKILL
// to the whole group, and once the leader has exited the harness kills
// what is left of the group and waits until nothing is, so a wrapper (sh
// -c, go run, npm start) cannot leave the real handler running after its
// "crash", and a handler's `kill 0` reaches only its own group. A process
// that leaves the group (setsid, setpgid) is beyond its reach.

// GroupDrainTimeout bounds the wait, after the group is gone, for the
// worker's stdout and stderr to close: only a process that left the group
// can still hold them then.
const GroupDrainTimeout = 2 * time.Second

// GroupReapTimeout bounds the wait for the group to empty after the leader
// has exited and the rest has been sent SIGKILL.
const GroupReapTimeout = 10 * time.Second

// group is a started worker in its own process group, with the pipes
// that carry its stdout and stderr into the writers it was given.
type group struct {
	cmd    *exec.Cmd
	pipes  []*os.File
	copied chan struct{}
}

// startGroup starts cmd as the leader of a new process group. Its
// standard output and error go through pipes the harness owns into
// stdout and stderr; a cancelled context kills the whole group. A
// Pdeathsig already set on cmd is kept.
func startGroup(cmd *exec.Cmd, stdout, stderr io.Writer) (*group, error) {
	var death syscall.Signal
	if cmd.SysProcAttr != nil {
		death = cmd.SysProcAttr.Pdeathsig
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: death}
	g := &group{cmd: cmd, copied: make(chan struct{})}
	var ends []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(g.pipes)
			closeAll(ends)
			return nil, err
		}
		g.pipes, ends = append(g.pipes, r), append(ends, w)
	}
	cmd.Stdout, cmd.Stderr = ends[0], ends[1]
	cmd.Cancel = func() error { return g.kill() }
	// The context's kill goes to the group; Wait gives up on the leader
	// only if that did not end it.
	cmd.WaitDelay = GroupReapTimeout
	err := cmd.Start()
	closeAll(ends)
	if err != nil {
		closeAll(g.pipes)
		return nil, err
	}
	writers := []io.Writer{stdout, stderr}
	left := make(chan struct{}, 2)
	for i, r := range g.pipes {
		go func() {
			io.Copy(writers[i], r)
			left <- struct{}{}
		}()
	}
	go func() {
		<-left
		<-left
		close(g.copied)
	}()
	return g, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// kill sends SIGKILL to every process of the group.
func (g *group) kill() error {
	err := syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// wait waits for the leader, then kills what is left of its group and
// waits until the group is empty, then until its output has been read.
// It returns the leader's exit as exec.Cmd.Wait does, and the group's
// processes that outlived the leader, as they were before the kill.
func (g *group) wait() (werr error, left []procstat.Stat) {
	werr = g.cmd.Wait()
	left = reapGroup(g.cmd.Process.Pid, GroupReapTimeout)
	deadline := time.Now().Add(GroupDrainTimeout)
	for _, r := range g.pipes {
		r.SetReadDeadline(deadline)
	}
	<-g.copied
	closeAll(g.pipes)
	return werr, left
}

// LingerGrace is how long the group of a leader that has exited may take
// to empty by itself before what is left of it counts as having outlived
// the leader: a process the leader signalled as it exited (`trap 'kill 0'
// EXIT`) is still dying, not lingering.
const LingerGrace = 500 * time.Millisecond

// reapGroup kills the process group pgid, whose leader has been waited
// for, until no live process of it is left or the timeout passes. It
// returns the live processes it found before the first kill, once the
// group had LingerGrace to empty by itself.
func reapGroup(pgid int, timeout time.Duration) []procstat.Stat {
	// Most groups are the leader alone, already waited for: a signal 0 to
	// the group then finds no one, and the scan of /proc (every process
	// of the machine's stat file, once per child) is not needed.
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	first := groupStats(pgid)
	for end := time.Now().Add(LingerGrace); len(first) > 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
		first = groupStats(pgid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
		return first
	}
	end := time.Now().Add(timeout)
	for delay := time.Millisecond; time.Now().Before(end); delay = min(2*delay, 50*time.Millisecond) {
		// Killed members become zombies until their new parent reaps
		// them; a group of zombies only is empty.
		if len(GroupMembers(pgid)) == 0 {
			break
		}
		time.Sleep(delay)
		if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
			break
		}
	}
	return first
}

// GroupMembers lists the live processes (not zombies) of process group
// pgid, from /proc.
func GroupMembers(pgid int) []int {
	var pids []int
	for _, st := range groupStats(pgid) {
		pids = append(pids, st.PID)
	}
	return pids
}

// groupStats reads the live processes of process group pgid from /proc.
func groupStats(pgid int) []procstat.Stat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procstat.Stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procstat.Read(pid); err == nil && st.PGRP == pgid && st.Live() {
			out = append(out, st)
		}
	}
	return out
}

// lingered is the record of what outlived the leader pid of its group,
// nil when nothing did.
func lingered(pid int, left []procstat.Stat) *results.Lingered {
	if len(left) == 0 {
		return nil
	}
	l := &results.Lingered{Group: pid, Processes: []results.LingeringProcess{}}
	for _, st := range left {
		l.Processes = append(l.Processes, results.LingeringProcess{PID: st.PID, Comm: st.Comm})
	}
	return l
}

// Alive says whether process pid is alive (a zombie is not).
func Alive(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && st.Live()
}
