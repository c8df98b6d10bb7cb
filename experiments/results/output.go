package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"idemlab/experiments/errclass"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Output is a results folder under construction. Everything is written into
// a hidden sibling folder that is renamed into place only when complete, so
// an interrupted run never leaves a folder that looks finished.
type Output struct {
	Final   string
	Staging string
	// kept says Commit lost the final name to another and left the
	// results in Staging.
	kept bool
}

// PrepareOutput refuses an existing path, even an empty folder, and creates
// the staging folder next to it.
func PrepareOutput(out string) (*Output, error) {
	if out == "" {
		return nil, fmt.Errorf("%w: --out: a folder name is required", errclass.ErrUsage)
	}
	parent := filepath.Dir(filepath.Clean(out))
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: --out %s: parent folder %s does not exist", errclass.ErrUsage, out, parent)
	}
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("%w: --out %s: already exists; choose a new folder", errclass.ErrUsage, out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: --out %s: %w", errclass.ErrUsage, out, errors.Unwrap(err))
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(out))+".partial-")
	if err != nil {
		return nil, fmt.Errorf("%w: --out %s: cannot write in %s: %w", errclass.ErrUsage, out, parent, errors.Unwrap(err))
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		os.RemoveAll(staging)
		return nil, fmt.Errorf("%w: --out %s: %w", errclass.ErrUsage, out, err)
	}
	return &Output{Final: out, Staging: staging}, nil
}

// WriteResults writes results.json into the staging folder.
func (o *Output) WriteResults(r *Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: encode results: %w", errclass.ErrHarness, err)
	}
	f, err := os.OpenFile(filepath.Join(o.Staging, ResultsFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: create results: %w", errclass.ErrHarness, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("%w: write results: %w", errclass.ErrHarness, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%w: sync results: %w", errclass.ErrHarness, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: close results: %w", errclass.ErrHarness, err)
	}
	return nil
}

// Commit renames the staging folder to its final name, in one step that
// refuses a final name that exists (renameat2 with RENAME_NOREPLACE): of
// two runs given the same --out, exactly one publishes. The other's error
// is a usage error naming --out and its staging folder, which it keeps
// there, whole, for Abort no longer removes it.
func (o *Output) Commit() error {
	err := unix.Renameat2(unix.AT_FDCWD, o.Staging, unix.AT_FDCWD, o.Final, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system without RENAME_NOREPLACE: check, then rename,
		// which a rename over an empty folder can still win.
		if _, lerr := os.Lstat(o.Final); lerr == nil {
			err = unix.EEXIST
		} else {
			err = os.Rename(o.Staging, o.Final)
		}
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		o.kept = true
		return &TakenError{Final: o.Final, Staging: o.Staging}
	}
	if err != nil {
		return fmt.Errorf("%w: move results into %s: %w", errclass.ErrHarness, o.Final, err)
	}
	if d, err := os.Open(filepath.Dir(filepath.Clean(o.Final))); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// TakenError is Commit's error when another published the final name
// first: a usage error that names --out and the staging folder holding
// this run's results, which Commit keeps. A caller that finds the
// published folder to be this very run's work may remove Staging.
type TakenError struct {
	Final, Staging string
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("%v: --out %s: appeared during the run; results left in %s", errclass.ErrUsage, e.Final, e.Staging)
}

// Unwrap makes the error a usage error (exit 2).
func (e *TakenError) Unwrap() error { return errclass.ErrUsage }

// Abort removes the staging folder, unless Commit kept it, having named
// it in its error.
func (o *Output) Abort() {
	if !o.kept {
		os.RemoveAll(o.Staging)
	}
}

// WriteNew writes a file of a results folder that must not exist yet, and
// syncs it, so a folder renamed into place holds every byte it names.
func WriteNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
