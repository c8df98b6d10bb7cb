package faultvfs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// StateDirName is the sidecar folder, inside the database's folder, that
// holds the log and the durable images.
const StateDirName = ".faultvfs"

const (
	logName  = "log"
	lockName = "lock"
	imgDir   = "img"
)

// ErrNoState means a folder has no sidecar: nothing ran there through the
// VFS since the last Baseline or Recover, so there is nothing to recover.
var ErrNoState = errors.New("faultvfs: no state folder")

// dirState is one process's view of one folder's sidecar. The log on disk
// is the truth; the Model here is a cache of it, brought up to date under
// the file lock before every change, so several processes can share the
// folder.
type dirState struct {
	mu    sync.Mutex
	dir   string
	state string
	lock  *os.File
	log   *os.File
	info  os.FileInfo // identity of the log file the cache was read from
	off   int64
	m     Model
}

var (
	dirsMu sync.Mutex
	dirs   = map[string]*dirState{}
)

// stateFor returns the cached state of dir, creating the sidecar if needed.
func stateFor(dir string) (*dirState, error) {
	dirsMu.Lock()
	defer dirsMu.Unlock()
	if d, ok := dirs[dir]; ok {
		return d, nil
	}
	d := &dirState{dir: dir, state: filepath.Join(dir, StateDirName), m: NewModel()}
	if err := os.MkdirAll(filepath.Join(d.state, imgDir), 0o755); err != nil {
		return nil, fmt.Errorf("faultvfs: create state folder: %w", err)
	}
	var err error
	if d.lock, err = os.OpenFile(filepath.Join(d.state, lockName), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return nil, fmt.Errorf("faultvfs: open lock: %w", err)
	}
	dirs[dir] = d
	return d, nil
}

// forget drops the cached state of dir, after Baseline or Recover replaced
// the sidecar under it.
func forget(dir string) {
	dirsMu.Lock()
	defer dirsMu.Unlock()
	if d, ok := dirs[dir]; ok {
		d.mu.Lock()
		d.lock.Close()
		if d.log != nil {
			d.log.Close()
		}
		d.mu.Unlock()
		delete(dirs, dir)
	}
}

// do runs fn with the folder locked against this process and every other
// one, and appends the ops fn returns to the log in a single write, so a
// process killed at any instant leaves either all of them or none.
func (d *dirState) do(fn func(m *Model) ([]Op, error)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := lockFile(d.lock); err != nil {
		return fmt.Errorf("faultvfs: lock %s: %w", d.state, err)
	}
	defer unlockFile(d.lock)
	if err := d.refresh(); err != nil {
		return err
	}
	ops, err := fn(&d.m)
	if err != nil || len(ops) == 0 {
		return err
	}
	var buf []byte
	for _, op := range ops {
		if err := d.m.Apply(op); err != nil {
			return fmt.Errorf("faultvfs: %w", err)
		}
		line, err := jsonLine(op)
		if err != nil {
			return fmt.Errorf("faultvfs: %w", err)
		}
		buf = append(buf, line...)
	}
	n, err := d.log.Write(buf)
	d.off += int64(n)
	if err != nil {
		return fmt.Errorf("faultvfs: append to log: %w", err)
	}
	return nil
}

// refresh reads the ops other processes appended since the last look. If
// the log file was replaced, the cache starts over from the new one.
func (d *dirState) refresh() error {
	path := filepath.Join(d.state, logName)
	st, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("faultvfs: %w", err)
	}
	if d.log == nil || st == nil || !os.SameFile(st, d.info) {
		if d.log != nil {
			d.log.Close()
		}
		if d.log, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("faultvfs: open log: %w", err)
		}
		if d.info, err = d.log.Stat(); err != nil {
			return fmt.Errorf("faultvfs: %w", err)
		}
		d.off, d.m = 0, NewModel()
		st = d.info
	}
	if st.Size() <= d.off {
		return nil
	}
	buf := make([]byte, st.Size()-d.off)
	n, err := d.log.ReadAt(buf, d.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("faultvfs: read log: %w", err)
	}
	buf = buf[:n]
	// Only whole lines count; a line is written in one call, so a partial
	// one can only be a write still in flight.
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i+1]
	} else {
		buf = nil
	}
	if err := applyLog(&d.m, buf); err != nil {
		return err
	}
	d.off += int64(len(buf))
	return nil
}

// applyLog applies every whole line of a log to m.
func applyLog(m *Model, b []byte) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		var op Op
		if err := json.Unmarshal(b[:i], &op); err != nil {
			return fmt.Errorf("faultvfs: log line %q: %w", b[:i], err)
		}
		if err := m.Apply(op); err != nil {
			return fmt.Errorf("faultvfs: %w", err)
		}
		b = b[i+1:]
	}
	return nil
}

// jsonLine encodes one op as one log line.
func jsonLine(op Op) ([]byte, error) {
	b, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("encode op: %w", err)
	}
	return append(b, '\n'), nil
}

// newIno names an inode uniquely across all processes sharing a folder.
func newIno() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// snapshot copies the file's whole current content to the inode's image.
// Copying the whole file, not the caller's own writes, is what makes a sync
// by one process cover the writes of every other, as fsync does. The copy
// goes to a temporary name first, so a process killed half-way leaves the
// previous image in place.
func snapshot(state, path, ino string) error {
	src, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("faultvfs: snapshot: %w", err)
	}
	defer src.Close()
	dst := filepath.Join(state, imgDir, ino)
	tmp, err := os.CreateTemp(filepath.Join(state, imgDir), ".tmp-"+ino+"-")
	if err != nil {
		return fmt.Errorf("faultvfs: snapshot: %w", err)
	}
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("faultvfs: snapshot %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("faultvfs: snapshot %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("faultvfs: snapshot %s: %w", path, err)
	}
	return nil
}

// isShm reports whether name is a WAL index, which the model never keeps.
func isShm(name string) bool { return strings.HasSuffix(name, "-shm") }
