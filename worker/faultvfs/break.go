package faultvfs

import (
	"os"
	"path/filepath"
	"sync/atomic"
)

// Break is a deliberately wrong recovery. It exists so that a test can show
// the durability oracle catches a cut that does not do what the model says;
// the oracle knows nothing of it, and the harness never sets it.
type Break int32

const (
	// BreakNone is the real recovery.
	BreakNone Break = iota
	// BreakNoRestore reports the plan but restores, removes and brings
	// back nothing: the cut loses nothing at all.
	BreakNoRestore
	// BreakDropSynced reports the plan but puts every planned file back
	// to its content at the last Baseline, or removes it if it had none:
	// the cut loses synced data too.
	BreakDropSynced
)

// baseDir holds the baseline's copies while BreakDropSynced is set.
const baseDir = "base"

var brk atomic.Int32

func broken() Break { return Break(brk.Load()) }

// SetBreakForTest switches recovery to b for the whole process until the
// returned function undoes it. Tests only: nothing records it, so a run
// under it fails its oracle, which is the point.
func SetBreakForTest(b Break) (undo func()) {
	old := brk.Swap(int32(b))
	return func() { brk.Store(old) }
}

// keepBase stores a baseline copy of one file for BreakDropSynced.
func keepBase(state, name string, b []byte) error {
	if err := os.MkdirAll(filepath.Join(state, baseDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(state, baseDir, name), b, 0o644)
}
