package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"idemlab/experiments/durability"
	"idemlab/experiments/powerlayer"
	"idemlab/worker/powerfs"
)

// fsMountsUnder lists the powerfs mounts /proc/self/mountinfo shows under
// dir.
func fsMountsUnder(t *testing.T, dir string) []powerfs.MountInfo {
	t.Helper()
	ms, err := powerfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	var out []powerfs.MountInfo
	for _, m := range ms {
		if strings.HasPrefix(m.Mountpoint, dir+"/") {
			out = append(out, m)
		}
	}
	return out
}

// waitFSMount waits for a powerfs mount under dir and returns it.
func waitFSMount(t *testing.T, dir string) powerfs.MountInfo {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if ms := fsMountsUnder(t, dir); len(ms) > 0 {
			return ms[0]
		}
	}
	t.Error("no powerfs mount appeared")
	return powerfs.MountInfo{}
}

// TestDurabilityFSLayerLeavesNoMount: a durability run on the fs power
// layer stopped by Ctrl-C exits 130 and leaves nothing mounted; a harness
// SIGKILLed with its mount's server leaves a stale mount, which the next
// run on the fs layer unmounts first and names.
func TestDurabilityFSLayerLeavesNoMount(t *testing.T) {
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
	bin := idemlabBinary(t)
	input, _ := filepath.Abs("../input.json")
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	args := func(out string) []string {
		return []string{"experiment", "--quiet", "--input", input, "--scenario", "durability", "--power-layer", "fs",
			"--pattern", "redelivery-single,redelivery-separate", "--kind", "power", "--out", filepath.Join(dir, out)}
	}
	t.Run("Ctrl-C", func(t *testing.T) {
		// Once in four full `make test` runs the harness, stopped by
		// Ctrl-C at its first mount, did not exit within 2 minutes: its
		// server, SIGKILLed while go-fuse's request to its own mount was
		// in flight, could not exit, and the harness waited for it without
		// a bound. Every wait for a server is bounded now, and the
		// connection is aborted past the bound (powerfs/abort.go).
		var m powerfs.MountInfo
		r := runBinary(t, bin, dir, 2*time.Minute, func(p *os.Process) {
			m = waitFSMount(t, dir)
			p.Signal(syscall.SIGINT)
		}, args("interrupted")...)
		if r.code != 130 {
			t.Fatalf("exit %d, want 130:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if left := fsMountsUnder(t, dir); len(left) > 0 {
			t.Errorf("mounted after Ctrl-C: %+v", left)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", m.Server)); m.Server == 0 || err == nil {
			t.Errorf("the mount's server (pid %d) is still there after the harness exited", m.Server)
		}
	})
	t.Run("SIGKILL then sweep", func(t *testing.T) {
		var stale powerfs.MountInfo
		runBinary(t, bin, dir, 2*time.Minute, func(p *os.Process) {
			stale = waitFSMount(t, dir)
			// The harness and its server die at once, as a machine's OOM
			// killer might do: nobody unmounts.
			syscall.Kill(stale.Server, syscall.SIGKILL)
			syscall.Kill(-p.Pid, syscall.SIGKILL)
		}, args("killed")...)
		if stale.Mountpoint == "" {
			t.Fatal("no mount to leave stale")
		}
		if left := fsMountsUnder(t, dir); len(left) == 0 {
			t.Fatalf("the killed run left no stale mount (%s); nothing to sweep", stale.Mountpoint)
		}
		// Its scratch folders: the trials' folders, the mount's point and
		// its server's store, each with its owner's record beside it.
		var scratch []string
		for _, prefix := range []string{durability.ScratchPrefix, powerlayer.MountPrefix, powerlayer.StorePrefix} {
			found, _ := filepath.Glob(filepath.Join(dir, prefix+"*.owner"))
			for _, rec := range found {
				scratch = append(scratch, strings.TrimSuffix(rec, ".owner"))
			}
		}
		if !slices.Contains(scratch, stale.Mountpoint) {
			t.Fatalf("the killed run's mount point %s is not among its recorded scratch folders %v", stale.Mountpoint, scratch)
		}
		r := runBinary(t, bin, dir, 5*time.Minute, nil, append(args("next"), "--journal-mode", "DELETE", "--synchronous", "NORMAL")...)
		if r.code != 0 {
			t.Fatalf("the next run exited %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "unmounted the stale mount "+stale.Mountpoint) {
			t.Errorf("the next run did not say it unmounted %s:\n%s", stale.Mountpoint, r.stderr)
		}
		if left := fsMountsUnder(t, dir); len(left) > 0 {
			t.Errorf("mounted after the next run: %+v", left)
		}
		for _, d := range scratch {
			if _, err := os.Stat(d); err == nil || !strings.Contains(r.stderr, "removed "+d+", a scratch folder of a run that is gone") {
				t.Errorf("the killed run's %s: still there (%v), or the next run did not say it removed it", d, err == nil)
			}
			if _, err := os.Stat(d + ".owner"); err == nil {
				t.Errorf("the record of %s is still there", d)
			}
		}
	})
}
