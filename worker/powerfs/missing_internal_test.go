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
	for p, content := range map[string]string{dev: "", withFuse: "nodev\tproc\nnodev\tfuse\n\text4\n", without: "nodev\tproc\n\text4\n"} {
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
		{"root with FUSE", machine{dev, withFuse, 0, notFound}, ""},
		{"no /dev/fuse", machine{filepath.Join(dir, "none"), withFuse, 0, found}, "FUSE is missing: no " + filepath.Join(dir, "none")},
		{"no fuse in the kernel", machine{dev, without, 0, found}, "FUSE is missing: the kernel lists no fuse filesystem in " + without},
		{"not root, no fusermount3", machine{dev, withFuse, 1000, notFound}, "FUSE is missing: not root and no fusermount3 on PATH"},
		{"not root, with fusermount3", machine{dev, withFuse, 1000, found}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, missing(tt.m)); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}
