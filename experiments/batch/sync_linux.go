package batch

import (
	"cmp"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"idemlab/experiments/harness"
)

// syncFS flushes the file system that holds dir.
func syncFS(dir string) error {
	f, err := os.Open(cmp.Or(dir, os.TempDir()))
	if err != nil {
		return fmt.Errorf("%w: open %s to sync it: %v", harness.ErrHarness, dir, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("%w: sync the file system of %s: %v", harness.ErrHarness, dir, err)
	}
	return nil
}
