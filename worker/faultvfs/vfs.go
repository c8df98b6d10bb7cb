//go:build cgo

package faultvfs

/*
#cgo linux LDFLAGS: -Wl,--unresolved-symbols=ignore-in-object-files
#cgo darwin LDFLAGS: -Wl,-undefined,dynamic_lookup
#include "sqlite_api.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
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
	// db is set for a main database file, whose descriptors must never be
	// closed while SQLite may hold POSIX locks on it.
	db bool
	// src reads a journal or WAL for snapshots; closed with the handle.
	src *os.File
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
	openMainDB      = 0x00000100
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
	h := &handle{d: d, path: path, name: filepath.Base(path), db: flags&openMainDB != 0}
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
		img, err := h.snapshot(m)
		if err != nil {
			return nil, err
		}
		return []Op{{Kind: OpAdopt, Name: h.name, Ino: h.ino, Img: img}}, nil
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
	err := h.d.do(func(m *Model) ([]Op, error) {
		// Copied under the lock, so images land in the order of the
		// syncs even when processes race.
		own := h.d.pending[h.ino]
		img, err := h.update(m, own)
		if err != nil {
			return nil, err
		}
		delete(h.d.pending, h.ino)
		op := Op{Kind: OpSync, Name: h.name, Ino: h.ino, Img: img, DirSync: h.dirSync, Spans: own}
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
	h := handles[int64(id)]
	delete(handles, int64(id))
	handlesMu.Unlock()
	if h != nil && h.src != nil {
		h.d.mu.Lock()
		h.src.Close()
		h.d.mu.Unlock()
	}
}

//export idemlabFltWrite
func idemlabFltWrite(id C.longlong, start, end C.longlong) {
	handlesMu.Lock()
	h := handles[int64(id)]
	handlesMu.Unlock()
	if h != nil {
		h.d.note(h.ino, Span{int64(start), int64(end)})
	}
}

// idemlabFltPublish logs every range this process wrote and has not
// published yet. SQLite calls it through every lock release, so a process
// that takes a lock after this one and syncs knows what to copy.
//
//export idemlabFltPublish
func idemlabFltPublish() C.int {
	if pendingDirs.Load() == 0 {
		return 0
	}
	if err := publishAll(); err != nil {
		fail(err)
		return 1
	}
	return 0
}

// update brings an image of the file up to its current content and
// returns its name. With a spare slot, the one holding the image before the
// current one, it copies into it only the ranges written since that image
// (the model's PrevDirty and Dirty, and own, this process's unpublished
// writes); without one it stores a whole snapshot. Runs under d.mu and the
// folder's lock.
func (h *handle) update(m *Model, own []Span) (string, error) {
	spare, ok := m.Spare[h.ino]
	if !ok {
		return h.snapshot(m)
	}
	src, err := h.source()
	if err != nil {
		return "", fmt.Errorf("faultvfs: snapshot: %w", err)
	}
	// A process killed half-way through this copy leaves the slot with
	// some spans already at their newer content; the model still lists
	// them all, so the next sync copies them again and the slot is right.
	dst, err := h.d.image(spare)
	if err != nil {
		return "", err
	}
	spans := MergeSpans(MergeSpans(m.PrevDirty[h.ino], m.Dirty[h.ino]), own)
	if err := copySpans(dst, src, spans); err != nil {
		return "", fmt.Errorf("faultvfs: copy to image: %w", err)
	}
	return spare, nil
}

// source returns the descriptor snapshots read the file through.
func (h *handle) source() (*os.File, error) {
	switch {
	case h.db:
		return h.d.dbFile(h.path, h.ino)
	case h.src != nil:
		return h.src, nil
	}
	src, err := os.Open(h.path)
	if err == nil {
		h.src = src
	}
	return src, err
}

// snapshot stores the file's whole current content as a new image. The
// copy reads through a descriptor of this package's own, so it stays in the
// kernel. For a database that descriptor is kept for the life of the
// process: closing any descriptor of a file drops every POSIX lock the
// process holds on it, SQLite's included. Journals and WAL files carry no
// such locks, so theirs close with the handle. Runs under d.mu.
func (h *handle) snapshot(m *Model) (string, error) {
	src, err := h.source()
	if err != nil {
		return "", fmt.Errorf("faultvfs: snapshot: %w", err)
	}
	return h.d.storeImage(m, src)
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
	if phase == 0 && d.known(name) {
		// Deleting a name the VFS already tracks needs no adoption.
		return 0
	}
	err = d.do(func(m *Model) ([]Op, error) {
		if phase == 1 {
			return []Op{{Kind: OpDelete, Name: name, DirSync: dirSync&1 != 0}}, nil
		}
		if _, ok := m.Live[name]; ok {
			return nil, nil
		}
		// SQLite deletes journals and WAL files, never a database, and
		// holds no POSIX locks on those, so opening and closing is safe.
		src, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("faultvfs: %w", err)
		}
		defer src.Close()
		img, err := d.storeImage(m, src)
		if err != nil {
			return nil, err
		}
		return []Op{{Kind: OpAdopt, Name: name, Ino: newIno(), Img: img}}, nil
	})
	if err != nil {
		fail(err)
		return 1
	}
	return 0
}
