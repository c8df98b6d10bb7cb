package powerfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A SIGKILLed server does not always exit. go-fuse opens a file on the
// mount it serves as the mount comes up (its poll hack), and a server
// killed while that request is in flight, or while it closes that file,
// waits for an answer only its own dead threads could give: the kernel
// closes /dev/fuse, which would end the wait, only after that thread
// exits (golang/go#21014 is the same trap in Go's poller). Measured here:
// 6 of 200 servers SIGKILLed as their mount appeared stayed in D state
// until the connection was aborted. So every wait for a server is
// bounded, and past the bound the parent aborts the connection, which
// answers every request in flight with ENOTCONN.
const (
	// exitWait is how long a SIGKILLed server has to exit before its
	// connection is aborted, and then again after the abort.
	exitWait = 2 * time.Second
	// abortWait bounds the wait for the server's exit after the abort.
	abortWait = 10 * time.Second
)

// fusectl is where the kernel lists FUSE connections, each with an abort
// file; a filesystem of its own (magic fusectlMagic), mounted on demand.
const (
	fusectl      = "/sys/fs/fuse/connections"
	fusectlMagic = 0x65735543
)

// live are the mounts of this process whose server has not been reaped,
// for AbortAll.
var live = struct {
	sync.Mutex
	m map[*Mount]bool
}{m: map[*Mount]bool{}}

// kill SIGKILLs the server's group and waits for it to exit; a server that
// has not exited after exitWait has its connection aborted (MNT_FORCE
// while the mount is attached, the connection's abort file after a lazy
// unmount), and the wait ends after abortWait whatever happens, saying
// why. It never blocks longer.
func (m *Mount) kill() error {
	m.setKilled()
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	if m.waitExit(exitWait) {
		return nil
	}
	how := abortConn(m.Mountpoint, m.dev)
	if m.waitExit(abortWait) {
		return nil
	}
	return fmt.Errorf("powerfs: the server (pid %d) did not exit %s after SIGKILL and the connection's abort (%s)",
		m.cmd.Process.Pid, exitWait+abortWait, how)
}

// setKilled notes a kill of a server that has not been reaped yet.
func (m *Mount) setKilled() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.exited:
	default:
		m.killed = true
	}
}

// waitExit waits up to d for the server to be reaped.
func (m *Mount) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-m.exited:
		return true
	case <-t.C:
		return false
	}
}

// abortConn aborts the FUSE connection of the mount at mnt, device dev
// (0 when unknown): MNT_FORCE if mnt is still a powerfs mount (the kernel
// aborts a FUSE connection before it finds the mount busy), then the
// connection's abort file. It says what it did.
func abortConn(mnt string, dev uint64) string {
	var did []string
	if ms, err := Mounts(); err == nil {
		for _, mi := range ms {
			if mi.Mountpoint == mnt {
				if dev == 0 {
					dev = mi.Dev
				}
				err := unix.Unmount(mnt, unix.MNT_FORCE)
				did = append(did, fmt.Sprintf("MNT_FORCE: %v", errText(err)))
			}
		}
	}
	if dev != 0 {
		did = append(did, "abort file: "+errText(writeAbort(dev)))
	}
	if len(did) == 0 {
		return "no connection found to abort"
	}
	return fmt.Sprint(did)
}

func errText(err error) string {
	if err == nil {
		return "done"
	}
	return err.Error()
}

// writeAbort writes the abort file of connection dev, mounting the
// fusectl filesystem first where it is not (it needs root, as a direct
// mount does). A connection that is gone has no abort file: nothing to do.
func writeAbort(dev uint64) error {
	dir := filepath.Join(fusectl, fmt.Sprint(dev))
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(fusectl); err != nil {
			return err
		}
		var st unix.Statfs_t
		if err := unix.Statfs(fusectl, &st); err == nil && st.Type != fusectlMagic {
			if err := unix.Mount("fusectl", fusectl, "fusectl", 0, ""); err != nil {
				return fmt.Errorf("mount fusectl: %w", err)
			}
		}
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	return os.WriteFile(filepath.Join(dir, "abort"), []byte("1"), 0o200)
}

// AbortAll is the last resort of a harness whose teardown ran past its
// deadline: for every mount of this process whose server is not reaped,
// it SIGKILLs the server's group, aborts the connection (which frees every
// process blocked on it, this one included) and detaches the mount. It
// waits for nothing and returns one line per mount.
func AbortAll() []string {
	live.Lock()
	ms := make([]*Mount, 0, len(live.m))
	for m := range live.m {
		ms = append(ms, m)
	}
	live.Unlock()
	var said []string
	for _, m := range ms {
		m.setKilled()
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		how := abortConn(m.Mountpoint, m.dev)
		said = append(said, fmt.Sprintf("powerfs: aborted the mount %s (server pid %d): %s; detach: %s",
			m.Mountpoint, m.cmd.Process.Pid, how, errText(Detach(m.Mountpoint))))
	}
	return said
}
