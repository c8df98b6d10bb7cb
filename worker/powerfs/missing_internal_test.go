package powerfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMissing names each thing a machine may lack, in one line.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "fuse")
	withFuse, without := filepath.Join(dir, "fs-with"), filepath.Join(dir, "fs-without")
	allow, deny := filepath.Join(dir, "fuse-allow.conf"), filepath.Join(dir, "fuse-deny.conf")
	for p, content := range map[string]string{dev: "", withFuse: "nodev\tproc\nnodev\tfuse\n\text4\n", without: "nodev\tproc\n\text4\n",
		allow: "# mount_max = 1000\n user_allow_other\n", deny: "#user_allow_other\n"} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found := func(string) (string, error) { return "/bin/fusermount3", nil }
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	tests := []struct {
		name string
		m    machine
		want string
	}{
		{"root with FUSE", machine{dev, withFuse, deny, 0, notFound}, ""},
		{"no /dev/fuse", machine{filepath.Join(dir, "none"), withFuse, allow, 0, found}, "FUSE is missing: no " + filepath.Join(dir, "none")},
		{"no fuse in the kernel", machine{dev, without, allow, 0, found}, "FUSE is missing: the kernel lists no fuse filesystem in " + without},
		{"not root, no fusermount3", machine{dev, withFuse, allow, 1000, notFound}, "FUSE is missing: not root and no fusermount3 on PATH"},
		{"not root, with fusermount3", machine{dev, withFuse, allow, 1000, found}, ""},
		{"not root, user_allow_other commented out", machine{dev, withFuse, deny, 1000, found},
			"FUSE is missing: not root, and " + deny + " does not set user_allow_other, which a mount open to other users (allow_other) needs"},
		{"not root, no fuse.conf", machine{dev, withFuse, filepath.Join(dir, "none.conf"), 1000, found},
			"FUSE is missing: not root, and " + filepath.Join(dir, "none.conf") + " does not set user_allow_other, which a mount open to other users (allow_other) needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, missing(tt.m)); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}
