package broker_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/redelivery"
	"idemlab/worker/powerfs"
)

// TestRunLeavesNothing runs the built idemlab with --broker nats, which
// finds idemlab-nats beside itself, to its end and interrupted by SIGINT
// half-way; either way no broker process and no store folder is left.
// Killed by SIGKILL, it runs no cleanup: its broker dies with it and its
// store stays, until the next run's sweep removes it. The finished run's
// folder reruns to the same figures.
func TestRunLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemlab and runs it")
	}
	bin := buildBoth(t)
	root, err := brokertest.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"to the end", "interrupted", "killed"} {
		interrupt := how != "to the end"
		t.Run(how, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(filepath.Join(bin, "idemlab"), "experiment", "--quiet", "--scenario", "redelivery", "--broker", broker.NATS,
				"--input", filepath.Join(root, "input.json"), "--out", filepath.Join(tmp, "out"))
			cmd.Env = append(withoutVar(os.Environ(), broker.EnvNATSServer), "TMPDIR="+tmp)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			want := 0
			if interrupt {
				want = 130
				sig := os.Interrupt
				if how == "killed" {
					want, sig = -1, os.Kill
				}
				if !waitFor(func() bool { return len(stores(t, tmp)) > 0 }, 20*time.Second) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("no broker store appeared in %s; stderr:\n%s", tmp, stderr.String())
				}
				time.Sleep(200 * time.Millisecond)
				cmd.Process.Signal(sig)
			}
			err := cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if code != want {
				t.Errorf("exit %d (%v), want %d; stderr:\n%s", code, err, want, stderr.String())
			}
			exe := filepath.Join(bin, broker.NATSBinary)
			if how == "to the end" {
				// verify --rerun runs the folder again, on brokers of its
				// own, and finds every figure and verdict reproduced.
				v := exec.Command(filepath.Join(bin, "idemlab"), "verify", "--rerun", filepath.Join(tmp, "out"))
				v.Env = cmd.Env
				out, err := v.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "rerun: redelivery reproduced") {
					t.Errorf("verify --rerun: %v\n%s", err, out)
				}
			}
			if how == "killed" {
				if !waitFor(func() bool { return len(running(exe)) == 0 }, 5*time.Second) {
					t.Errorf("the broker outlived its killed parent: %v", running(exe))
				}
				left := stores(t, tmp)
				if len(left) == 0 {
					t.Fatal("no store left by a killed run: the sweep below proves nothing")
				}
				self, err := backend.Self()
				if err != nil {
					t.Fatal(err)
				}
				if swept := broker.SweepStores(tmp, self); len(swept) != len(left) {
					t.Errorf("the sweep removed %v, the run left %v", swept, left)
				}
			}
			if left := stores(t, tmp); len(left) > 0 {
				t.Errorf("store folders left: %v", left)
			}
			if pids := running(exe); len(pids) > 0 {
				t.Errorf("broker processes left: %v", pids)
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
		})
	}
}

// buildBoth builds idemlab and idemlab-nats side by side into a folder
// of the test's and returns it.
func buildBoth(t *testing.T) string {
	t.Helper()
	brokertest.Need(t)
	bin := t.TempDir()
	for _, pkg := range []string{".", "./cmd/idemlab-nats"} {
		name := "idemlab"
		if pkg != "." {
			name = broker.NATSBinary
		}
		if err := brokertest.Build(filepath.Join(bin, name), pkg); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// TestPowerRunInterruptedLeavesNothing interrupts a --broker-power run
// while a condition's broker runs on its power-loss mount. Interrupted
// (SIGINT), the run exits 130 and leaves no mount, no broker, no trial
// folder and no results folder. Killed (SIGKILL), it runs no cleanup: its
// mount's server unmounts when its standard input ends and its broker
// dies with it, and the trial folder it leaves is the next run's to
// sweep.
func TestPowerRunInterruptedLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemlab and runs it")
	}
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
	bin := buildBoth(t)
	root, err := brokertest.Root()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, broker.NATSBinary)
	for _, sig := range []os.Signal{os.Interrupt, os.Kill} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(tmp, "out")
			cmd := exec.Command(filepath.Join(bin, "idemlab"), "experiment", "--quiet", "--scenario", "redelivery", "--broker", broker.NATS,
				"--broker-power", "--input", filepath.Join(root, "input.json"), "--out", out)
			cmd.Env = append(withoutVar(os.Environ(), broker.EnvNATSServer), "TMPDIR="+tmp)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			mounted := func() []string {
				var on []string
				ms, _ := powerfs.Mounts()
				for _, m := range ms {
					if strings.HasPrefix(m.Mountpoint, tmp) {
						on = append(on, m.Mountpoint)
					}
				}
				return on
			}
			if !waitFor(func() bool { return len(mounted()) > 0 && len(running(exe)) > 0 }, 60*time.Second) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no broker on a power-loss mount under %s; stderr:\n%s", tmp, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			var ee *exec.ExitError
			if want := map[os.Signal]int{os.Interrupt: 130, os.Kill: -1}[sig]; !errors.As(err, &ee) || ee.ExitCode() != want {
				t.Errorf("exit %v, want %d; stderr:\n%s", err, want, stderr.String())
			}
			if !waitFor(func() bool { return len(mounted()) == 0 && len(running(exe)) == 0 }, 10*time.Second) {
				t.Errorf("left mounted %v, brokers left %v", mounted(), running(exe))
				for _, p := range running(exe) {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
			trials, _ := filepath.Glob(filepath.Join(tmp, redelivery.PowerTrialPrefix+"*"))
			if sig == os.Kill {
				self, err := backend.Self()
				if err != nil {
					t.Fatal(err)
				}
				if len(trials) == 0 {
					t.Fatal("no trial folder left by a killed run: the sweep below proves nothing")
				}
				if swept := broker.SweepOwned(tmp, redelivery.PowerTrialPrefix, self); len(swept) != len(trials) {
					t.Errorf("the sweep removed %v, the run left %v", swept, trials)
				}
				trials, _ = filepath.Glob(filepath.Join(tmp, redelivery.PowerTrialPrefix+"*"))
			}
			if left := append(stores(t, tmp), trials...); len(left) > 0 {
				t.Errorf("folders left: %v", left)
			}
			if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--out %s was made (%v)", out, err)
			}
		})
	}
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// stores lists the broker store folders anywhere under dir.
func stores(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "idemlab-jetstream-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// running lists the processes whose executable is exe.
func running(exe string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && l == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitFor(ok func() bool, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return false
}
