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
	"strconv"
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
	off   int64
	m     Model
	imgs  map[string]*os.File
	dbs   map[string]*os.File
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
	d := &dirState{dir: dir, state: filepath.Join(dir, StateDirName), m: NewModel(), imgs: map[string]*os.File{}, dbs: map[string]*os.File{}}
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
// the sidecar under it. It closes descriptors of databases, so no
// connection of this process may have them open.
func forget(dir string) {
	dirsMu.Lock()
	defer dirsMu.Unlock()
	if d, ok := dirs[dir]; ok {
		d.mu.Lock()
		d.lock.Close()
		if d.log != nil {
			d.log.Close()
		}
		for _, f := range d.imgs {
			f.Close()
		}
		for _, f := range d.dbs {
			f.Close()
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

// known reports whether name was live in the model as last read. A name,
// once tracked, stays tracked until Baseline or Recover, so a stale answer
// of true is still right.
func (d *dirState) known(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.m.Live[name]
	return ok
}

// refresh reads the ops other processes appended since the last look.
// The log is opened once per process and folder: only Baseline and Recover
// replace it, and they run while no process uses the folder.
func (d *dirState) refresh() error {
	if d.log == nil {
		var err error
		if d.log, err = os.OpenFile(filepath.Join(d.state, logName), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("faultvfs: open log: %w", err)
		}
		d.off, d.m = 0, NewModel()
	}
	st, err := d.log.Stat()
	if err != nil {
		return fmt.Errorf("faultvfs: %w", err)
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

// storeImage writes content, the whole of a file as of a sync, into an
// image no inode needs any more, and returns its name. Whole content, not
// the caller's own writes, is what makes a sync by one process cover the
// writes of every other, as fsync does. Until the caller logs the op that
// points at the new image, the model still points at the old one, so a
// process killed half-way leaves a consistent state. Images are reused and
// stay open, because creating files costs more than the writes themselves.
func (d *dirState) storeImage(m *Model, src *os.File) (string, error) {
	used := m.UsedImages()
	k := 0
	for used[strconv.Itoa(k)] {
		k++
	}
	name := strconv.Itoa(k)
	f := d.imgs[name]
	if f == nil {
		var err error
		if f, err = os.OpenFile(filepath.Join(d.state, imgDir, name), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			return "", fmt.Errorf("faultvfs: open image: %w", err)
		}
		d.imgs[name] = f
	}
	if err := copyWhole(f, src); err != nil {
		return "", fmt.Errorf("faultvfs: copy to image: %w", err)
	}
	return name, nil
}

// copyPortable copies size bytes from the start of src over dst with
// positional reads and writes.
func copyPortable(dst, src *os.File, size int64) error {
	n, err := io.Copy(io.NewOffsetWriter(dst, 0), io.NewSectionReader(src, 0, size))
	if err != nil {
		return err
	}
	return dst.Truncate(n)
}

// dbFile returns this process's descriptor for a database inode, opened on
// first use and kept until forget; see handle.snapshot for why.
func (d *dirState) dbFile(path, ino string) (*os.File, error) {
	if f := d.dbs[ino]; f != nil {
		return f, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	d.dbs[ino] = f
	return f, nil
}

// isShm reports whether name is a WAL index, which the model never keeps.
func isShm(name string) bool { return strings.HasSuffix(name, "-shm") }
