package powerfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Missing says in one line what this machine lacks to serve a mount, or ""
// when nothing is missing.
func Missing() string {
	return missing(machine{devFuse: "/dev/fuse", filesystems: "/proc/filesystems", fuseConf: "/etc/fuse.conf", euid: os.Geteuid(), lookPath: exec.LookPath})
}

// machine is where Missing looks.
type machine struct {
	devFuse, filesystems string
	// fuseConf is fusermount3's configuration, read when not root.
	fuseConf string
	euid     int
	lookPath func(string) (string, error)
}

func missing(m machine) string {
	if _, err := os.Stat(m.devFuse); err != nil {
		return "FUSE is missing: no " + m.devFuse
	}
	if b, err := os.ReadFile(m.filesystems); err == nil && !bytes.Contains(b, []byte("\tfuse\n")) {
		return "FUSE is missing: the kernel lists no fuse filesystem in " + m.filesystems
	}
	if m.euid != 0 {
		if _, err := m.lookPath("fusermount3"); err != nil {
			return "FUSE is missing: not root and no fusermount3 on PATH"
		}
		if !allowsOther(m.fuseConf) {
			return "FUSE is missing: not root, and " + m.fuseConf + " does not set user_allow_other, which a mount open to other users (allow_other) needs"
		}
	}
	return ""
}

// allowsOther says whether fusermount3's configuration at path lets a
// user mount with allow_other.
func allowsOther(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "user_allow_other" {
			return true
		}
	}
	return false
}

// Mount is the parent's handle on one serving process and its mount. The
// parent never touches the mount itself: it reads the backing folder and
// the store only.
type Mount struct {
	Config
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	// mounted is closed on the server's "mounted"; cuts carries its sync
	// cut events; end gets its last event; exited is closed when it ends.
	mounted chan struct{}
	armed   chan struct{}
	cuts    chan CutEvent
	mu      sync.Mutex
	last    string
	// frozePid is the process whose sync the server froze.
	frozePid int
	exited   chan struct{}
	waitErr  error
	// MountTook is how long the mount took, from the start of the process
	// to its "mounted".
	MountTook time.Duration
	// dev is the mount's device, read at its "mounted": it names the
	// connection to abort after the mount is detached (abort.go).
	dev uint64
	// started and ended are when the server started and was reaped;
	// killed says the parent SIGKILLed it.
	started, ended time.Time
	killed         bool
}

// Ended is the server's end, for its process record: when it was reaped,
// how it ended, and whether the parent killed it; ok is false while it
// has not been reaped.
func (m *Mount) Ended() (end time.Time, st *os.ProcessState, killed, ok bool) {
	select {
	case <-m.exited:
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.ended, m.cmd.ProcessState, m.killed, true
	default:
		return time.Time{}, nil, false, false
	}
}

// Started is when the server was started.
func (m *Mount) Started() time.Time { return m.started }

// Argv is the server's command line.
func (m *Mount) Argv() []string { return m.cmd.Args }

// Stderr is what the server wrote on its stderr; read it once it ended.
func (m *Mount) Stderr() string { return m.stderr.String() }

// CutEvent is the server's word that the mount froze at a sync.
type CutEvent struct {
	At   string
	Sync int
	Pid  int
}

// Start re-executes exe (the running binary when empty) as the serving
// process, in a process group of its own, and waits for its mount.
func Start(ctx context.Context, exe string, cfg Config) (*Mount, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	p, err := cfg.Params.normalize()
	if err != nil {
		return nil, err
	}
	cfg.Params = p
	for _, d := range []string{cfg.Backing, cfg.Mountpoint} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	m := &Mount{Config: cfg, mounted: make(chan struct{}), armed: make(chan struct{}, 1), cuts: make(chan CutEvent, 1), exited: make(chan struct{})}
	m.cmd = exec.Command(exe, append([]string{"worker", WorkerName}, cfg.Args()...)...)
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	m.cmd.Stderr = &m.stderr
	// A process of the server's group that outlives it keeps the pipes
	// open; the wait for the server ends anyway.
	m.cmd.WaitDelay = exitWait
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	m.started = t0
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	live.Lock()
	live.m[m] = true
	live.Unlock()
	go m.read(out)
	select {
	case <-m.mounted:
		m.MountTook = time.Since(t0)
		if ms, err := Mounts(); err == nil {
			for _, mi := range ms {
				if mi.Mountpoint == cfg.Mountpoint {
					m.dev = mi.Dev
				}
			}
		}
		return m, nil
	case <-m.exited:
		return nil, fmt.Errorf("powerfs: the server exited before mounting: %v: %s", m.waitErr, strings.TrimSpace(m.stderr.String()))
	case <-ctx.Done():
		// The server may be mid-mount, with go-fuse's request to its own
		// mount in flight: kill is bounded (abort.go).
		return nil, errors.Join(ctx.Err(), m.kill(), Detach(cfg.Mountpoint))
	}
}

func (m *Mount) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case EventMounted:
			close(m.mounted)
		case EventArmed:
			select {
			case m.armed <- struct{}{}:
			default:
			}
		case EventCut:
			if len(f) == 4 {
				n, _ := strconv.Atoi(f[2])
				pid, _ := strconv.Atoi(f[3])
				m.mu.Lock()
				m.frozePid = pid
				m.mu.Unlock()
				select {
				case m.cuts <- CutEvent{At: f[1], Sync: n, Pid: pid}:
				default: // one cut per mount; never block the reader
				}
			}
		default:
			m.mu.Lock()
			m.last = f[0]
			m.mu.Unlock()
		}
	}
	m.waitErr = m.cmd.Wait()
	m.ended = time.Now()
	live.Lock()
	delete(live.m, m)
	live.Unlock()
	close(m.exited)
}

// armWait bounds the wait for the server's answer to Arm.
const armWait = 10 * time.Second

// Arm has the mount freeze before its n-th sync from now on, as a start
// with CutSync n does (Cuts then delivers it), and waits for the server
// to say it is armed.
func (m *Mount) Arm(n int) error {
	if _, err := fmt.Fprintf(m.stdin, "%s %d\n", CmdArm, n); err != nil {
		return fmt.Errorf("powerfs: arm the cut: %w", err)
	}
	select {
	case <-m.armed:
		return nil
	case <-m.exited:
		return fmt.Errorf("powerfs: the server exited before it armed the cut: %s", strings.TrimSpace(m.stderr.String()))
	case <-time.After(armWait):
		return fmt.Errorf("powerfs: the server did not arm the cut in %s", armWait)
	}
}

// Cuts delivers the sync cut the server was started with, when a process
// reaches it; then the parent calls Cut.
func (m *Mount) Cuts() <-chan CutEvent { return m.cuts }

// Pid is the serving process.
func (m *Mount) Pid() int { return m.cmd.Process.Pid }

// Cut is the power cut: it SIGKILLs the process groups pgids, the group of
// the process whose sync froze the mount, and those of every process that
// still holds something open on the mount, has the
// server freeze, unmount and rebuild the backing folder, and returns the
// outcome. If the server cannot, because it died, the parent unmounts and
// rebuilds from the store itself. The mount is gone when it returns.
func (m *Mount) Cut(pgids ...int) (Outcome, error) {
	m.mu.Lock()
	if m.frozePid > 0 {
		if g, err := syscall.Getpgid(m.frozePid); err == nil {
			pgids = append(pgids, g)
		}
	}
	m.mu.Unlock()
	KillUsers(m.Mountpoint, m.Pid(), pgids...)
	_, _ = io.WriteString(m.stdin, CmdCut+"\n")
	var killErr error
	if !m.waitExit(30 * time.Second) {
		killErr = m.kill()
	}
	m.mu.Lock()
	done := m.last == EventDone
	m.mu.Unlock()
	if !done {
		if err := Detach(m.Mountpoint); err != nil {
			return Outcome{}, errors.Join(err, killErr)
		}
		if killErr != nil {
			// A server that is still alive may still write the folder.
			return Outcome{}, killErr
		}
		o, err := Recover(m.Backing, m.Store, m.Params)
		if err != nil {
			return o, fmt.Errorf("powerfs: the server did not cut (%v: %s); recovering from the store: %w",
				m.waitErr, strings.TrimSpace(m.stderr.String()), err)
		}
		return o, nil
	}
	if IsMounted(m.Mountpoint) {
		return Outcome{}, fmt.Errorf("powerfs: %s is still mounted after the cut", m.Mountpoint)
	}
	var o Outcome
	b, err := os.ReadFile(filepath.Join(m.Store, OutcomeName))
	if err != nil {
		return o, err
	}
	return o, json.Unmarshal(b, &o)
}

// Close unmounts without a cut: the backing folder keeps everything, as
// after a pass. A server that died or does not answer is killed and its
// mount detached. The mount is gone when it returns, or it says why not.
func (m *Mount) Close() error {
	var killErr error
	select {
	case <-m.exited:
	default:
		KillUsers(m.Mountpoint, m.Pid())
		_, _ = io.WriteString(m.stdin, CmdUnmount+"\n")
		_ = m.stdin.Close()
		if !m.waitExit(10 * time.Second) {
			killErr = m.kill()
		}
	}
	if err := Detach(m.Mountpoint); err != nil {
		return errors.Join(err, killErr)
	}
	if killErr != nil {
		return killErr
	}
	if IsMounted(m.Mountpoint) {
		return fmt.Errorf("powerfs: %s is still mounted", m.Mountpoint)
	}
	return nil
}

// Detach unmounts mnt lazily if it is a powerfs mount, which also clears
// the "transport endpoint is not connected" a dead server leaves.
func Detach(mnt string) error {
	if !IsMounted(mnt) {
		return nil
	}
	if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("powerfs: unmount %s: %w", mnt, err)
	}
	return nil
}

// KillUsers SIGKILLs the process groups pgids, and every process that has
// its working directory, root, executable or an open file on the mount
// with its group, except the server's and the caller's own group, whose
// processes it kills one by one. It reads /proc only, never the mount.
func KillUsers(mnt string, server int, pgids ...int) {
	self := syscall.Getpgrp()
	groups := map[int]bool{}
	for _, g := range pgids {
		groups[g] = true
	}
	for _, pid := range Users(mnt) {
		if g, err := syscall.Getpgid(pid); err == nil {
			groups[g] = true
		}
		if pid != server {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for g := range groups {
		if g > 0 && g != self && g != server {
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
	}
	// No wait for them to go: a process blocked in a request the server
	// froze cannot die before the server exits, and any op a dying process
	// still makes is either logged before the freeze or never answered.
}

// Users lists the processes that use the mount, from /proc.
func Users(mnt string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	on := func(p string) bool { return p == mnt || strings.HasPrefix(p, mnt+"/") }
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		hit := false
		for _, l := range []string{"cwd", "root", "exe"} {
			if t, err := os.Readlink(filepath.Join(dir, l)); err == nil && on(t) {
				hit = true
			}
		}
		if fds, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil && !hit {
			for _, fd := range fds {
				if t, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && on(t) {
					hit = true
					break
				}
			}
		}
		if hit {
			out = append(out, pid)
		}
	}
	return out
}

// MountInfo is one powerfs line of /proc/self/mountinfo.
type MountInfo struct {
	Mountpoint string
	// Server is the serving process named in the source field.
	Server int
	// Dev is the mount's device number as the kernel encodes it, which
	// names its connection under /sys/fs/fuse/connections.
	Dev uint64
}

// parseDev reads mountinfo's "MAJOR:MINOR" as the kernel's dev_t.
func parseDev(s string) uint64 {
	maj, min, ok := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(min, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0
	}
	return a<<20 | b
}

// Mounts lists the powerfs mounts /proc/self/mountinfo shows.
func Mounts() ([]MountInfo, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []MountInfo
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+2 >= len(f) || f[sep+1] != "fuse."+FSName {
			continue
		}
		mi := MountInfo{Mountpoint: unescape(f[4]), Dev: parseDev(f[2])}
		if pid, ok := strings.CutPrefix(f[sep+2], FSName+":"); ok {
			mi.Server, _ = strconv.Atoi(pid)
		}
		out = append(out, mi)
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// IsMounted says whether mnt is a powerfs mount now.
func IsMounted(mnt string) bool {
	ms, _ := Mounts()
	for _, m := range ms {
		if m.Mountpoint == mnt {
			return true
		}
	}
	return false
}

// Sweep unmounts every powerfs mount whose serving process is gone, as a
// harness SIGKILLed with its server, or a server that crashed, leaves
// them, and says so on w, one line each. It returns the mount points it
// cleared.
func Sweep(w io.Writer) ([]string, error) {
	ms, err := Mounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if serverAlive(m.Server) {
			continue
		}
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil {
			return out, fmt.Errorf("powerfs: unmount stale %s: %w", m.Mountpoint, err)
		}
		fmt.Fprintf(w, "powerfs: unmounted the stale mount %s (its server, pid %d, is gone)\n", m.Mountpoint, m.Server)
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// serverAlive says whether pid is a running powerfs server.
func serverAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// A zombie has exited and serves nothing.
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			return false
		}
	}
	return bytes.Contains(b, []byte(WorkerName))
}
