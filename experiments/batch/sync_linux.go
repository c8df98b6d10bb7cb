package batch

import (
	"cmp"
	"fmt"
	"idemlab/experiments/errclass"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the file system that holds dir.
func syncFS(dir string) error {
	f, err := os.Open(cmp.Or(dir, os.TempDir()))
	if err != nil {
		return fmt.Errorf("%w: open %s to sync it: %w", errclass.ErrHarness, dir, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("%w: sync the file system of %s: %w", errclass.ErrHarness, dir, err)
	}
	return nil
}
