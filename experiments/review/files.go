package review

import (
	"fmt"
	"os"
	"path/filepath"

	"idemlab/experiments/errclass"
)

// CheckWritable refuses, as a usage error, an output file that could not
// be written: its folder is missing or not writable, or the path is a
// folder. Commands call it before any work, so a bad path costs nothing
// and leaves nothing half done. An empty path is not asked for and passes.
func CheckWritable(flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%w: %s %s: is a folder; name a file", errclass.ErrUsage, flag, path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s %s: folder %s does not exist; create it first or choose another path", errclass.ErrUsage, flag, path, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-")
	if err != nil {
		return fmt.Errorf("%w: %s %s: cannot write in folder %s: %w", errclass.ErrUsage, flag, path, dir, unwrapPath(err))
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// WriteFile replaces path through a temporary sibling and a rename, so a
// reader never sees half a file and a failed write leaves the old one.
func WriteFile(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("%w: write %s: %w", errclass.ErrUsage, path, unwrapPath(err))
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: write %s: %w", errclass.ErrHarness, path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: write %s: %w", errclass.ErrHarness, path, err)
	}
	return nil
}
