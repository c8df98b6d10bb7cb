//go:build cgo

package faultvfs

/*
#include "sqlite_api.h"
*/
import "C"

import (
	"errors"
	"sync"
)

// syncCut is the armed cut at the N-th sync of this process.
var syncCut struct {
	mu    sync.Mutex
	n     int
	after bool
	seen  int
	crash func()
}

// ArmSyncCut makes the process stop inside its n-th sync through the VFS,
// counting every sync of a database, journal or WAL file: just before the
// fsync when after is false, or just after it is done and recorded when
// after is true, the way src/test6.c crashes inside a chosen xSync. crash
// must not return; it writes the worker's report and exits. Before calling
// it the VFS publishes this process's unpublished write ranges to the log,
// so the log holds every write the cut may tear.
func ArmSyncCut(n int, after bool, crash func()) error {
	if n < 1 || crash == nil {
		return errors.New("faultvfs: a sync cut needs n >= 1 and a crash function")
	}
	syncCut.mu.Lock()
	syncCut.n, syncCut.after, syncCut.seen, syncCut.crash = n, after, 0, crash
	syncCut.mu.Unlock()
	C.idemlab_flt_arm(1)
	return nil
}

// idemlabFltSyncPoint runs just before (phase 0) and just after (phase 1)
// every sync while a cut is armed.
//
//export idemlabFltSyncPoint
func idemlabFltSyncPoint(_ C.longlong, phase C.int) {
	syncCut.mu.Lock()
	if phase == 0 {
		syncCut.seen++
	}
	fire := syncCut.seen == syncCut.n && (phase == 1) == syncCut.after
	crash := syncCut.crash
	syncCut.mu.Unlock()
	if !fire {
		return
	}
	if err := publishAll(); err != nil {
		fail(err)
	}
	crash()
}
