package owner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSweepTemp: a scratch folder whose recorded owner is gone is removed
// with its record, whatever it holds, and the sweep says so; one whose
// owner runs, one without a record, one of another prefix and one with a
// mount under it are left, whatever their age.
func TestSweepTemp(t *testing.T) {
	tmp := t.TempDir()
	self, err := Me()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := self
	gone.PID, gone.Start = dead.Process.Pid, self.Start+1
	mk := func(name string, o *Owner) string {
		t.Helper()
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			if err := os.WriteFile(dir+recordExt, []byte(o.String()+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	deadDir := mk("scratch-dead", &gone)
	live := mk("scratch-live", &self)
	bare := mk("scratch-bare", nil)
	other := mk("other-dead", &gone)
	mounted := mk("scratch-mounted", &gone)
	if err := unix.Mount("tmpfs", filepath.Join(mounted, "sub"), "tmpfs", 0, ""); err != nil {
		t.Logf("no tmpfs mount (%v): the mounted case is not checked", err)
		mounted = ""
	} else {
		t.Cleanup(func() { _ = unix.Unmount(filepath.Join(tmp, "scratch-mounted", "sub"), unix.MNT_DETACH) })
	}
	lines := SweepTemp(tmp, "scratch-")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(deadDir) || exists(deadDir+recordExt) {
		t.Errorf("the gone owner's folder or its record is still there")
	}
	for _, d := range []string{live, bare, other, mounted} {
		if d != "" && !exists(filepath.Join(d, "sub")) {
			t.Errorf("%s was removed", d)
		}
	}
	want := []string{"removed " + deadDir + ", a scratch folder of a run that is gone (" + gone.String() + ")"}
	if mounted != "" {
		want = append(want, "left "+mounted+", a scratch folder of a run that is gone ("+gone.String()+"): "+filepath.Join(mounted, "sub")+" is still mounted")
	}
	if !sameSet(lines, want) {
		t.Errorf("the sweep said\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestMkdirTempRecordsItsOwner: a scratch folder made by MkdirTemp names
// this process beside it, which the sweep leaves alone, and RemoveAll
// takes the record with the folder.
func TestMkdirTempRecordsItsOwner(t *testing.T) {
	tmp := t.TempDir()
	dir, err := MkdirTemp(tmp, "scratch-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dir + recordExt)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := Me()
	if o, err := Parse(strings.TrimSpace(string(b))); err != nil || o != self {
		t.Fatalf("record %q reads %+v, %v; want %+v", b, o, err, self)
	}
	if lines := SweepTemp(tmp, "scratch-"); len(lines) != 0 {
		t.Errorf("the sweep touched a live run's folder: %v", lines)
	}
	if err := RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left after RemoveAll: %v", left)
	}
}
