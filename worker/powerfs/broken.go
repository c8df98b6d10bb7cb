package powerfs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"idemlab/worker/protocol"
)

// BrokenKeepMain is a test's broken server (worker.Breaks), for the tests
// of this package and of those that run a server on a mount: its cut
// plans as asked but rebuilds nothing, so the backing folder keeps
// everything, even under drop.
func BrokenKeepMain(call *protocol.Call) int {
	recoverCut = func(backing, store string, p Params) (Outcome, error) {
		log, err := ReadLogFile(store)
		if err != nil {
			return Outcome{}, err
		}
		o, err := Plan(log, p)
		if err != nil {
			return o, err
		}
		b, _ := json.Marshal(o)
		return o, os.WriteFile(filepath.Join(store, OutcomeName), b, 0o644)
	}
	return Main(call)
}

// SelfHangMain is a test's broken server (worker.Breaks) that opens a file
// on its own mount and leaves the request unanswered, as go-fuse's poll
// hack does when the server is killed at its mount: a SIGKILL cannot end
// it, since the thread that waits for the answer never exits. silent
// keeps it from ever saying "mounted".
func SelfHangMain(silent bool) func(*protocol.Call) int {
	return func(call *protocol.Call) int {
		afterMount = func(s *server) {
			s.mu.Lock()
			s.frozen = true
			s.mu.Unlock()
			go func() {
				// A create is a change, which the frozen server holds.
				_, _ = unix.Open(filepath.Join(s.cfg.Mountpoint, "self-hang"), unix.O_CREAT|unix.O_WRONLY, 0o644)
			}()
			waitInFUSE(5 * time.Second)
			if silent {
				select {}
			}
		}
		return Main(call)
	}
}

// waitInFUSE waits, up to d, for a thread of this process to wait for a
// FUSE answer.
func waitInFUSE(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			if w, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "wchan")); err == nil && string(w) == "request_wait_answer" {
				return
			}
		}
	}
}
