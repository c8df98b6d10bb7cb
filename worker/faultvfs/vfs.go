//go:build cgo

package faultvfs

/*
#cgo linux LDFLAGS: -Wl,--unresolved-symbols=ignore-in-object-files
#cgo darwin LDFLAGS: -Wl,-undefined,dynamic_lookup
#include "sqlite_api.h"
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	// The SQLite symbols the wrapper calls are the ones this package
	// compiles; without the import nothing would provide them.
	_ "github.com/mattn/go-sqlite3"
)

var (
	regOnce sync.Once
	regErr  error
)

// Register adds the VFS to SQLite under Name. It runs once, on first use,
// and never at package init, because most workers never need it and their
// start-up time is measured.
func Register() error {
	regOnce.Do(func() {
		// The name must outlive the process, so it is never freed.
		if rc := C.idemlab_flt_register(C.CString(Name)); rc != 0 {
			regErr = fmt.Errorf("faultvfs: register %s: sqlite error %d", Name, int(rc))
		}
	})
	return regErr
}

// handle is one open tracked file, as the C side refers to it.
type handle struct {
	d    *dirState
	path string
	name string
	ino  string
	// dirSync mirrors the unix VFS's UNIXFILE_DIRSYNC: the first sync
	// through a journal or WAL opened with SQLITE_OPEN_CREATE also syncs
	// the directory.
	dirSync bool
}

var (
	handlesMu sync.Mutex
	handles   = map[int64]*handle{}
	nextID    atomic.Int64
	lastErr   atomic.Pointer[error]
)

// LastError returns the last error the VFS hit. SQLite only sees an I/O
// error code, so this is where the cause can be read.
func LastError() error {
	if p := lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

func fail(err error) { lastErr.Store(&err) }

const (
	openCreate      = 0x00000004
	openMainJournal = 0x00000800
	openSuper       = 0x00004000
	openWAL         = 0x00080000
)

//export idemlabFltOpen
func idemlabFltOpen(zName *C.char, flags C.int, exists C.int) C.longlong {
	path := filepath.Clean(C.GoString(zName))
	d, err := stateFor(filepath.Dir(path))
	if err != nil {
		fail(err)
		return -1
	}
	h := &handle{d: d, path: path, name: filepath.Base(path)}
	h.dirSync = flags&openCreate != 0 && flags&(openMainJournal|openSuper|openWAL) != 0
	err = d.do(func(m *Model) ([]Op, error) {
		if ino, ok := m.Live[h.name]; ok {
			// Known: either it was there, or another process created it
			// between this one's existence check and its open.
			h.ino = ino
			return nil, nil
		}
		h.ino = newIno()
		if exists == 0 {
			return []Op{{Kind: OpCreate, Name: h.name, Ino: h.ino}}, nil
		}
		// A file the VFS meets for the first time is taken as durable.
		if err := snapshot(d.state, path, h.ino); err != nil {
			return nil, err
		}
		return []Op{{Kind: OpAdopt, Name: h.name, Ino: h.ino}}, nil
	})
	if err != nil {
		fail(err)
		return -1
	}
	id := nextID.Add(1)
	handlesMu.Lock()
	handles[id] = h
	handlesMu.Unlock()
	return C.longlong(id)
}

//export idemlabFltSync
func idemlabFltSync(id C.longlong) C.int {
	handlesMu.Lock()
	h := handles[int64(id)]
	handlesMu.Unlock()
	if h == nil {
		fail(fmt.Errorf("faultvfs: sync of unknown handle %d", id))
		return 1
	}
	err := h.d.do(func(*Model) ([]Op, error) {
		if err := snapshot(h.d.state, h.path, h.ino); err != nil {
			return nil, err
		}
		op := Op{Kind: OpSync, Name: h.name, Ino: h.ino, DirSync: h.dirSync}
		h.dirSync = false
		return []Op{op}, nil
	})
	if err != nil {
		fail(err)
		return 1
	}
	return 0
}

//export idemlabFltClose
func idemlabFltClose(id C.longlong) {
	handlesMu.Lock()
	delete(handles, int64(id))
	handlesMu.Unlock()
}

// idemlabFltDelete runs before (phase 0) and after (phase 1) the base VFS
// deletes a file. Before, a file the VFS never met is adopted, so that an
// undurable deletion of it has something to bring back. After, the deletion
// is recorded.
//
//export idemlabFltDelete
func idemlabFltDelete(zName *C.char, dirSync C.int, phase C.int) C.int {
	path := filepath.Clean(C.GoString(zName))
	d, err := stateFor(filepath.Dir(path))
	if err != nil {
		fail(err)
		return 1
	}
	name := filepath.Base(path)
	err = d.do(func(m *Model) ([]Op, error) {
		if phase == 1 {
			return []Op{{Kind: OpDelete, Name: name, DirSync: dirSync&1 != 0}}, nil
		}
		if _, ok := m.Live[name]; ok || size(path) < 0 {
			return nil, nil
		}
		ino := newIno()
		if err := snapshot(d.state, path, ino); err != nil {
			return nil, err
		}
		return []Op{{Kind: OpAdopt, Name: name, Ino: ino}}, nil
	})
	if err != nil {
		fail(err)
		return 1
	}
	return 0
}
