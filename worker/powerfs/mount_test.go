package powerfs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// requireFUSE skips a test that needs a real mount where FUSE is missing.
func requireFUSE(t testing.TB) {
	t.Helper()
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
}

func requirePython(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// trial lays out one trial's folders, on one filesystem, and checks at
// the end that nothing is left mounted.
func trial(t testing.TB, p powerfs.Params) powerfs.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := powerfs.Config{Backing: filepath.Join(dir, "backing"), Mountpoint: filepath.Join(dir, "mnt"),
		Store: filepath.Join(dir, "store"), Params: p}
	for _, d := range []string{cfg.Backing, cfg.Mountpoint} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if powerfs.IsMounted(cfg.Mountpoint) {
			t.Errorf("%s is still in /proc/self/mountinfo", cfg.Mountpoint)
			_ = powerfs.Detach(cfg.Mountpoint)
		}
	})
	return cfg
}

func start(t testing.TB, cfg powerfs.Config) *powerfs.Mount {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := powerfs.Start(ctx, "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A test that stops early leaves a server that may be frozen, holding
	// its subject in a request only the server's end lets go of.
	t.Cleanup(func() { _ = m.Close() })
	if !powerfs.IsMounted(cfg.Mountpoint) {
		t.Fatalf("Start returned but %s is not in /proc/self/mountinfo", cfg.Mountpoint)
	}
	return m
}

// subject is a process on the mount, in a process group of its own, as
// the harness runs one.
type subject struct {
	cmd *exec.Cmd
	ack chan struct{}
}

// python runs a Python program; it prints "ACK" when its work is done.
func python(t testing.TB, program string, args ...string) *subject {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"-c", program}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &subject{cmd: cmd, ack: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ACK" {
				close(s.ack)
			}
		}
	}()
	t.Cleanup(func() {
		// No wait: a subject in a request a frozen server holds dies only
		// when the mount's cleanup, which runs after this one, ends the
		// server.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		go cmd.Wait()
	})
	return s
}

// waitAckOrCut waits for the subject's ACK or the mount's sync cut.
func waitAckOrCut(t testing.TB, m *powerfs.Mount, s *subject) string {
	t.Helper()
	select {
	case <-s.ack:
		return "ack"
	case ev := <-m.Cuts():
		return ev.At
	case <-time.After(30 * time.Second):
		t.Fatal("neither an ACK nor a cut within 30 s")
	}
	return ""
}

// files reads a backing folder: every regular file's content by path.
func files(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fileOps creates a, syncs it (sync 1), syncs the folder (2), appends and
// syncs again (3), creates b and syncs it (4), then ACKs.
const fileOps = `
import os, sys, time
mnt = sys.argv[1]
a = open(os.path.join(mnt, "a"), "w")
a.write("A1"); a.flush(); os.fsync(a.fileno())
d = os.open(mnt, os.O_RDONLY); os.fsync(d)
a.write("A2"); a.flush(); os.fsync(a.fileno())
b = open(os.path.join(mnt, "b"), "w")
b.write("B"); b.flush(); os.fsync(b.fileno())
print("ACK", flush=True)
time.sleep(600)
`

// TestSyncCutPoints cuts a real process before and after each sync of the
// mount, and on command after its ACK. What survives follows from the
// package doc's rules: a's name needs the folder's sync (sync 2) under
// POSIX, its own fsync (sync 1) under ext4; b's name is never synced.
func TestSyncCutPoints(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	tests := []struct {
		sync  int
		after bool
		dir   string
		model string
		want  map[string]string
	}{
		{1, false, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{}},
		{1, true, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{}},
		{1, true, powerfs.DirExt4, powerfs.ModelDrop, map[string]string{"a": "A1"}},
		{2, false, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{}},
		{2, true, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{"a": "A1"}},
		{3, false, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{"a": "A1"}},
		{3, true, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{"a": "A1A2"}},
		{4, true, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{"a": "A1A2"}},
		{4, true, powerfs.DirExt4, powerfs.ModelDrop, map[string]string{"a": "A1A2", "b": "B"}},
		{0, false, powerfs.DirPOSIX, powerfs.ModelDrop, map[string]string{"a": "A1A2"}},
		{0, false, powerfs.DirPOSIX, powerfs.ModelKeep, map[string]string{"a": "A1A2", "b": "B"}},
		{3, false, powerfs.DirPOSIX, powerfs.ModelKeep, map[string]string{"a": "A1A2"}},
	}
	for _, tt := range tests {
		name := tt.model + "/" + tt.dir + "/command"
		if tt.sync > 0 {
			name = tt.model + "/" + tt.dir + "/" + map[bool]string{false: "before-", true: "after-"}[tt.after] + itoa(int64(tt.sync))
		}
		t.Run(name, func(t *testing.T) {
			cfg := trial(t, powerfs.Params{Model: tt.model, DirModel: tt.dir})
			cfg.CutSync, cfg.CutAfter = tt.sync, tt.after
			m := start(t, cfg)
			s := python(t, fileOps, cfg.Mountpoint)
			got := waitAckOrCut(t, m, s)
			if want := map[bool]string{true: "ack", false: map[bool]string{false: "before", true: "after"}[tt.after]}[tt.sync == 0]; got != want {
				t.Fatalf("the subject stopped at %q, want %q", got, want)
			}
			t0 := time.Now()
			o, err := m.Cut(s.cmd.Process.Pid)
			t.Logf("cut took %v", time.Since(t0))
			if err != nil {
				t.Fatal(err)
			}
			if powerfs.IsMounted(cfg.Mountpoint) {
				t.Fatalf("%s is mounted after the cut", cfg.Mountpoint)
			}
			if diff := cmp.Diff(tt.want, files(t, cfg.Backing)); diff != "" {
				t.Errorf("backing folder after the cut (-want +got):\n%s", diff)
			}
			// The record alone gives the same outcome.
			log, err := powerfs.ReadLogFile(cfg.Store)
			if err != nil {
				t.Fatal(err)
			}
			again, err := powerfs.Plan(log, cfg.Params)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(o, again); diff != "" {
				t.Errorf("Plan from the log differs from the cut's outcome:\n%s", diff)
			}
			var names []string
			for _, e := range o.Entries {
				names = append(names, e.Path)
			}
			if diff := cmp.Diff(mapKeys(tt.want), names, cmp.Transformer("nil", func(s []string) []string {
				if s == nil {
					return []string{}
				}
				return s
			})); diff != "" {
				t.Errorf("outcome entries (-want +got):\n%s", diff)
			}
		})
	}
}

func mapKeys(m map[string]string) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestNothingLeftMounted checks /proc/self/mountinfo after a pass, a
// server that fails before mounting, a crashed server (with and without a
// cut after it), and a stale mount that Sweep finds.
func TestNothingLeftMounted(t *testing.T) {
	requireFUSE(t)
	t.Run("pass", func(t *testing.T) {
		cfg := trial(t, powerfs.Params{})
		m := start(t, cfg)
		if out, err := exec.Command("sh", "-c", "echo x > "+cfg.Mountpoint+"/f").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if powerfs.IsMounted(cfg.Mountpoint) {
			t.Fatal("still mounted after Close")
		}
		if diff := cmp.Diff(map[string]string{"f": "x\n"}, files(t, cfg.Backing)); diff != "" {
			t.Errorf("a pass keeps everything (-want +got):\n%s", diff)
		}
	})
	t.Run("failure before the mount", func(t *testing.T) {
		cfg := trial(t, powerfs.Params{})
		cfg.Store = filepath.Join(cfg.Backing, "store")
		_, err := powerfs.Start(context.Background(), "", cfg)
		if err == nil || !strings.Contains(err.Error(), "inside the backing folder") {
			t.Fatalf("Start: %v, want the store refused", err)
		}
	})
	t.Run("crashed server", func(t *testing.T) {
		cfg := trial(t, powerfs.Params{})
		m := start(t, cfg)
		if err := syscall.Kill(m.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitNotConnected(t, cfg.Mountpoint)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if powerfs.IsMounted(cfg.Mountpoint) {
			t.Fatal("still mounted after Close")
		}
	})
	t.Run("crashed server, then a cut from the store", func(t *testing.T) {
		cfg := trial(t, powerfs.Params{})
		if err := os.WriteFile(filepath.Join(cfg.Backing, "f"), []byte("durable"), 0o644); err != nil {
			t.Fatal(err)
		}
		m := start(t, cfg)
		if out, err := exec.Command("sh", "-c", "printf LOST > "+cfg.Mountpoint+"/f; echo y > "+cfg.Mountpoint+"/g").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if err := syscall.Kill(m.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitNotConnected(t, cfg.Mountpoint)
		if _, err := m.Cut(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"f": "durable"}, files(t, cfg.Backing)); diff != "" {
			t.Errorf("the parent's cut from the store (-want +got):\n%s", diff)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		cfg := trial(t, powerfs.Params{})
		m := start(t, cfg)
		if err := syscall.Kill(m.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if !waitNotConnected(t, cfg.Mountpoint) {
			t.Skip("another process's Sweep cleared this test's stale mount before this one could")
		}
		var said strings.Builder
		cleared, err := powerfs.Sweep(&said)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(cleared, cfg.Mountpoint) || !strings.Contains(said.String(), cfg.Mountpoint) {
			t.Errorf("Sweep cleared %q and said %q; want %s in both", cleared, said.String(), cfg.Mountpoint)
		}
		if powerfs.IsMounted(cfg.Mountpoint) {
			t.Fatal("still mounted after Sweep")
		}
		_ = m.Close()
	})
	t.Run("sweep leaves a live mount", func(t *testing.T) {
		cfg := trial(t, powerfs.Params{})
		m := start(t, cfg)
		cleared, err := powerfs.Sweep(&strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(cleared, cfg.Mountpoint) || !powerfs.IsMounted(cfg.Mountpoint) {
			t.Errorf("Sweep cleared the live mount %s", cfg.Mountpoint)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// waitNotConnected waits for the dead server's mount to answer ENOTCONN,
// the state a crash leaves; stat in a child, never in this process. It
// reports false when the mount is gone instead: any idemlab run on this
// machine (a test package running beside this one, say) sweeps a mount
// whose server is dead, this test's too, which is what Sweep is for.
func waitNotConnected(t testing.TB, mnt string) bool {
	t.Helper()
	for i := 0; i < 500; i++ {
		out, _ := exec.Command("stat", mnt).CombinedOutput()
		if strings.Contains(string(out), "not connected") {
			return true
		}
		if !powerfs.IsMounted(mnt) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never answered 'transport endpoint is not connected'", mnt)
	return false
}

// envHarness makes TestHarnessStand a harness that mounts at the path it
// names and waits to be killed.
const envHarness = "POWERFS_TEST_HARNESS_MNT"

// TestHarnessStand is not a test on its own: TestHarnessKilled runs the
// test binary as a harness with it.
func TestHarnessStand(t *testing.T) {
	mnt := os.Getenv(envHarness)
	if mnt == "" {
		t.Skip("run by TestHarnessKilled only")
	}
	dir := filepath.Dir(mnt)
	_, err := powerfs.Start(context.Background(), "", powerfs.Config{Backing: filepath.Join(dir, "backing"),
		Mountpoint: mnt, Store: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("MOUNTED\n")
	time.Sleep(time.Minute)
}

// TestHarnessKilled: a harness SIGKILLed with its mount up leaves nothing
// mounted, since its server unmounts when its stdin closes.
func TestHarnessKilled(t *testing.T) {
	requireFUSE(t)
	cfg := trial(t, powerfs.Params{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHarnessStand$")
	cmd.Env = append(os.Environ(), envHarness+"="+cfg.Mountpoint)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "MOUNTED" {
	}
	if !powerfs.IsMounted(cfg.Mountpoint) {
		t.Fatal("the harness never mounted")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for i := 0; i < 500 && powerfs.IsMounted(cfg.Mountpoint); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if powerfs.IsMounted(cfg.Mountpoint) {
		t.Fatal("the mount outlived its harness by 5 s")
	}
}

// TestCutKillsUsers: a process with a file open on the mount dies at the
// cut even when the parent names no group and it shares the parent's.
func TestCutKillsUsers(t *testing.T) {
	requireFUSE(t)
	cfg := trial(t, powerfs.Params{})
	if err := os.WriteFile(filepath.Join(cfg.Backing, "f"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := start(t, cfg)
	user := exec.Command("sh", "-c", "exec sleep 600 < "+filepath.Join(cfg.Mountpoint, "f"))
	if err := user.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- user.Wait() }()
	for i := 0; i < 200 && !slices.Contains(powerfs.Users(cfg.Mountpoint), user.Process.Pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := m.Cut(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if ws, ok := user.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the user ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		_ = user.Process.Kill()
		t.Fatal("the user outlived the cut")
	}
}

// TestKilledServerThatCannotExit: a server whose own request to its mount
// is in flight when it is killed (go-fuse's poll hack at the mount) cannot
// exit by itself. Every wait for it is bounded: Start cancelled at the
// mount, and Close, each return within the bound, with the server reaped
// and nothing mounted.
func TestKilledServerThatCannotExit(t *testing.T) {
	requireFUSE(t)
	const bound = 20 * time.Second
	for _, c := range []struct {
		name, breakage string
		run            func(cfg powerfs.Config) (pid int, err error)
	}{
		{"Start cancelled at the mount", breakSelfHangSilent, func(cfg powerfs.Config) (int, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			server := make(chan int, 1)
			go func() {
				defer cancel()
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					ms, _ := powerfs.Mounts()
					for _, mi := range ms {
						if mi.Mountpoint == cfg.Mountpoint {
							// The server's request to its mount is in flight
							// within 5 s of the mount; then cancel.
							time.Sleep(200 * time.Millisecond)
							server <- mi.Server
							return
						}
					}
				}
				server <- 0
			}()
			_, err := powerfs.Start(ctx, "", cfg)
			if !errors.Is(err, context.Canceled) {
				return 0, fmt.Errorf("Start: %v, want it cancelled", err)
			}
			return <-server, nil
		}},
		{"Close", breakSelfHang, func(cfg powerfs.Config) (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			m, err := powerfs.Start(ctx, "", cfg)
			if err != nil {
				return 0, err
			}
			return m.Pid(), m.Close()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(worker.EnvBreak, c.breakage)
			cfg := trial(t, powerfs.Params{})
			type result struct {
				pid int
				err error
			}
			done := make(chan result, 1)
			t0 := time.Now()
			go func() {
				pid, err := c.run(cfg)
				done <- result{pid, err}
			}()
			select {
			case r := <-done:
				if r.err != nil {
					t.Fatal(r.err)
				}
				t.Logf("returned in %v", time.Since(t0).Round(time.Millisecond))
				if r.pid == 0 {
					t.Fatal("no server seen")
				}
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", r.pid)); err == nil {
					t.Errorf("the server (pid %d) is still there", r.pid)
				}
				if powerfs.IsMounted(cfg.Mountpoint) {
					t.Errorf("%s is still mounted", cfg.Mountpoint)
				}
			case <-time.After(bound):
				t.Errorf("still waiting for the server after %v; aborting: %q", bound, powerfs.AbortAll())
				<-done
			}
		})
	}
}

// TestArmedCut: a mount armed after its start (Mount.Arm) freezes before
// the sync it names and cuts the same folder as a mount started with that
// CutSync (TestSyncCutPoints' row 3 before, POSIX, drop).
func TestArmedCut(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	cfg := trial(t, powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX})
	m := start(t, cfg)
	if err := m.Arm(3); err != nil {
		t.Fatal(err)
	}
	s := python(t, fileOps, cfg.Mountpoint)
	if got := waitAckOrCut(t, m, s); got != "before" {
		t.Fatalf("the subject stopped at %q, want before", got)
	}
	if _, err := m.Cut(s.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "A1"}, files(t, cfg.Backing)); diff != "" {
		t.Errorf("backing folder after the cut (-want +got):\n%s", diff)
	}
}
