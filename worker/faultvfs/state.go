package faultvfs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// pending holds, per inode, the ranges this process wrote and has not
	// published yet.
	pending map[string][]Span
}

var (
	dirsMu sync.Mutex
	dirs   = map[string]*dirState{}
	// pendingDirs counts folders with unpublished ranges, so the lock
	// releases of a process that wrote nothing cost one atomic load.
	pendingDirs atomic.Int64
	// copied counts the bytes this process copied into images, for the
	// tests and benchmarks that check a sync copies only what changed.
	copied atomic.Int64
)

// stateFor returns the cached state of dir, creating the sidecar if needed.
func stateFor(dir string) (*dirState, error) {
	dirsMu.Lock()
	defer dirsMu.Unlock()
	if d, ok := dirs[dir]; ok {
		return d, nil
	}
	d := &dirState{dir: dir, state: filepath.Join(dir, StateDirName), m: NewModel(), imgs: map[string]*os.File{}, dbs: map[string]*os.File{}, pending: map[string][]Span{}}
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
		if len(d.pending) > 0 {
			pendingDirs.Add(-1)
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

// note adds a range this process wrote to ino, to be published at its
// next lock release.
func (d *dirState) note(ino string, s Span) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) == 0 {
		pendingDirs.Add(1)
	}
	p := d.pending[ino]
	// SQLite mostly writes each range right after the last, so extending
	// the last span in place spares a sort.
	if n := len(p); n > 0 && p[n-1][1] != ToEnd && s[1] != ToEnd && s[0] >= p[n-1][0] && s[0] <= p[n-1][1] {
		p[n-1][1] = max(p[n-1][1], s[1])
		return
	}
	d.pending[ino] = MergeSpans(p, []Span{s})
}

// publishAll publishes the pending ranges of every folder.
func publishAll() error {
	dirsMu.Lock()
	all := make([]*dirState, 0, len(dirs))
	for _, d := range dirs {
		all = append(all, d)
	}
	dirsMu.Unlock()
	for _, d := range all {
		if err := d.publish(); err != nil {
			return err
		}
	}
	return nil
}

// publish logs this process's pending ranges of the folder, one OpWrite
// per inode. It is on the path of every commit, so it only appends, under
// the folder's lock, and leaves its lines to the next refresh to apply in
// log order.
func (d *dirState) publish() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) == 0 {
		return nil
	}
	var buf []byte
	for _, ino := range slices.Sorted(maps.Keys(d.pending)) {
		line, err := jsonLine(Op{Kind: OpWrite, Ino: ino, Spans: d.pending[ino]})
		if err != nil {
			return fmt.Errorf("faultvfs: %w", err)
		}
		buf = append(buf, line...)
	}
	if d.log == nil {
		var err error
		if d.log, err = os.OpenFile(filepath.Join(d.state, logName), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("faultvfs: open log: %w", err)
		}
		d.off, d.m = 0, NewModel()
	}
	if err := lockFile(d.lock); err != nil {
		return fmt.Errorf("faultvfs: lock %s: %w", d.state, err)
	}
	_, err := d.log.Write(buf)
	unlockFile(d.lock)
	if err != nil {
		return fmt.Errorf("faultvfs: append to log: %w", err)
	}
	clear(d.pending)
	pendingDirs.Add(-1)
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
	ops, err := parseLog(b)
	if err != nil {
		return fmt.Errorf("faultvfs: %w", err)
	}
	for _, op := range ops {
		if err := m.Apply(op); err != nil {
			return fmt.Errorf("faultvfs: %w", err)
		}
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
	f, err := d.image(name)
	if err != nil {
		return "", err
	}
	if st, err := src.Stat(); err == nil {
		copied.Add(st.Size())
	}
	if err := copyWhole(f, src); err != nil {
		return "", fmt.Errorf("faultvfs: copy to image: %w", err)
	}
	return name, nil
}

// image returns the open image slot name, opening it on first use.
func (d *dirState) image(name string) (*os.File, error) {
	if f := d.imgs[name]; f != nil {
		return f, nil
	}
	f, err := os.OpenFile(filepath.Join(d.state, imgDir, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("faultvfs: open image: %w", err)
	}
	d.imgs[name] = f
	return f, nil
}

// copySpans makes dst, which held the file's content at some earlier
// time, equal to src, given every range that changed since: it copies
// those ranges and the tail dst lacks, and cuts dst to src's size. When the
// ranges cover most of the file, one whole copy is cheaper.
func copySpans(dst, src *os.File, spans []Span) error {
	st, err := src.Stat()
	if err != nil {
		return err
	}
	dt, err := dst.Stat()
	if err != nil {
		return err
	}
	size, have := st.Size(), dt.Size()
	if have < size {
		spans = MergeSpans(spans, []Span{{have, ToEnd}})
	}
	var total int64
	for i, s := range spans {
		if s[1] == ToEnd || s[1] > size {
			spans[i][1] = size
		}
		if spans[i][0] < spans[i][1] {
			total += spans[i][1] - spans[i][0]
		}
	}
	if 2*total > size {
		copied.Add(size)
		return copyWhole(dst, src)
	}
	copied.Add(total)
	for _, s := range spans {
		if s[0] >= s[1] {
			continue
		}
		if err := copyRange(dst, src, s[0], s[1]-s[0]); err != nil {
			return err
		}
	}
	if have > size {
		return dst.Truncate(size)
	}
	return nil
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

// smallCopy is the largest range copied through copyBuf in one go.
const smallCopy = 64 << 10

// copyBuf is made on the first small copy, not at every worker's start
// (each idemlab worker is this binary, and most never copy a range).
var copyBuf []byte

// copyRangePortable copies n bytes at off from src to the same offset in
// dst with positional reads and writes. Callers hold a dirState's mu, and
// only one sync copies at a time per process, so copyBuf is shared under
// copyMu.
func copyRangePortable(dst, src *os.File, off, n int64) error {
	if n <= smallCopy {
		copyMu.Lock()
		defer copyMu.Unlock()
		if copyBuf == nil {
			copyBuf = make([]byte, smallCopy)
		}
		k, err := src.ReadAt(copyBuf[:n], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		_, err = dst.WriteAt(copyBuf[:k], off)
		return err
	}
	_, err := io.Copy(io.NewOffsetWriter(dst, off), io.NewSectionReader(src, off, n))
	return err
}

var copyMu sync.Mutex

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

// PublishPending logs this process's unpublished write ranges now. A worker
// about to stop at a crash point calls it, so that the log, and with it the
// torn mode, knows every write the process made, even one a lock release
// never published.
func PublishPending() error { return publishAll() }
