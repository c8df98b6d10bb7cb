package powerfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"idemlab/worker/faultvfs"
)

// The server's store, a folder on the backing folder's filesystem (hard
// links join the two): the op log, the pre-images of overwritten durable
// bytes, appended to one undo file, a link to every file a name change
// removed, so a cut can bring it back, and the outcome of the cut.
const (
	LogName     = "log.jsonl"
	OutcomeName = "outcome.json"
	undoName    = "undo.bin"
	stashDir    = "stash"
	treeDir     = "tree"
)

func stashPath(store string, ino uint64) string {
	return filepath.Join(store, stashDir, strconv.FormatUint(ino, 10))
}

// ReadLogFile reads the op log of a store.
func ReadLogFile(store string) ([]Op, error) {
	f, err := os.Open(filepath.Join(store, LogName))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLog(f)
}

// Recover cuts from the record: it plans the cut from the store's log and
// rebuilds the backing folder to match, then writes the outcome into the
// store. The server does this when asked to cut; the parent does it when
// the server died before it could. Nothing may use the backing folder
// meanwhile.
func Recover(backing, store string, p Params) (Outcome, error) {
	log, err := ReadLogFile(store)
	if err != nil {
		return Outcome{}, err
	}
	o, err := Plan(log, p)
	if err != nil {
		return Outcome{}, err
	}
	if err := Rebuild(backing, store, o); err != nil {
		return o, err
	}
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return o, err
	}
	return o, os.WriteFile(filepath.Join(store, OutcomeName), append(b, '\n'), 0o644)
}

// located is where an inode can be found now.
type located struct {
	path string
	st   syscall.Stat_t
}

// locate maps every inode in the backing folder and the stash to a path.
func locate(backing, store string) (map[uint64]located, error) {
	out := map[uint64]located{}
	add := func(p string) error {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if _, ok := out[st.Ino]; !ok {
			out[st.Ino] = located{p, st}
		}
		return nil
	}
	err := filepath.WalkDir(backing, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return add(p)
	})
	if err != nil {
		return nil, err
	}
	stash, err := os.ReadDir(filepath.Join(store, stashDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range stash {
		if err := add(filepath.Join(store, stashDir, e.Name())); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Rebuild makes the backing folder what o says survives: the files' bytes
// first, on their inodes, then a new tree of the surviving names, linked
// to those inodes, which replaces the folder's content. A name o does not
// list, such as one created since its directory's last sync, goes.
func Rebuild(backing, store string, o Outcome) error {
	where, err := locate(backing, store)
	if err != nil {
		return err
	}
	for _, f := range o.Files {
		at, ok := where[f.Ino]
		if !ok {
			return fmt.Errorf("powerfs: rebuild: inode %d (%s) is neither in the folder nor in the store", f.Ino, f.Path)
		}
		if err := restore(at.path, store, f, o); err != nil {
			return err
		}
	}
	tree := filepath.Join(store, treeDir)
	if err := os.RemoveAll(tree); err != nil {
		return err
	}
	var rootSt syscall.Stat_t
	if err := syscall.Lstat(backing, &rootSt); err != nil {
		return err
	}
	if err := os.Mkdir(tree, 0o700); err != nil {
		return err
	}
	for _, e := range o.Entries {
		dst := filepath.Join(tree, filepath.FromSlash(e.Path))
		at, ok := where[e.Ino]
		if e.Type == TypeDir {
			mode, uid, gid := e.Mode&0o7777, rootSt.Uid, rootSt.Gid
			if ok {
				mode, uid, gid = at.st.Mode&0o7777, at.st.Uid, at.st.Gid
			}
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
			if err := os.Chown(dst, int(uid), int(gid)); err != nil {
				return err
			}
			if err := os.Chmod(dst, fs.FileMode(mode)|modeBits(mode)); err != nil {
				return err
			}
			continue
		}
		if !ok {
			return fmt.Errorf("powerfs: rebuild: inode %d (%s) is neither in the folder nor in the store", e.Ino, e.Path)
		}
		if err := os.Link(at.path, dst); err != nil {
			return err
		}
	}
	old, err := os.ReadDir(backing)
	if err != nil {
		return err
	}
	for _, e := range old {
		if err := os.RemoveAll(filepath.Join(backing, e.Name())); err != nil {
			return err
		}
	}
	fresh, err := os.ReadDir(tree)
	if err != nil {
		return err
	}
	for _, e := range fresh {
		if err := os.Rename(filepath.Join(tree, e.Name()), filepath.Join(backing, e.Name())); err != nil {
			return err
		}
	}
	if err := os.Remove(tree); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(store, stashDir))
}

// modeBits carries setuid, setgid and sticky, which fs.FileMode keeps
// apart from the permission bits.
func modeBits(mode uint32) fs.FileMode {
	var m fs.FileMode
	if mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// restore rewrites one file's bytes on its inode as f decides.
func restore(path, store string, f File, o Outcome) error {
	if strings.Trim(f.Decisions, string(rune(faultvfs.DecideKeep))) == "" {
		return nil // every unit kept: the live bytes are the answer
	}
	h, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer h.Close()
	if strings.Trim(f.Decisions, string(rune(faultvfs.DecideDrop))) == "" {
		// Every unit dropped: the durable bytes, in place.
		if err := h.Truncate(f.Size); err != nil {
			return err
		}
		return undo(store, f, func(b []byte, off int64) error { _, err := h.WriteAt(b, off); return err })
	}
	live, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	durable := make([]byte, f.Size)
	copy(durable, live)
	if err := undo(store, f, func(b []byte, off int64) error { copy(durable[off:], b); return nil }); err != nil {
		return err
	}
	out, err := faultvfs.Tear(durable, live, faultvfs.TornFile{Name: f.Path, Ino: strconv.FormatUint(f.Ino, 10),
		Spans: f.Spans, Decisions: f.Decisions}, o.Seed, o.Unit)
	if err != nil {
		return err
	}
	if err := h.Truncate(0); err != nil {
		return err
	}
	_, err = h.WriteAt(out, 0)
	return err
}

// undo hands put every saved pre-image of f.
func undo(store string, f File, put func(b []byte, off int64) error) error {
	if len(f.Undo) == 0 {
		return nil
	}
	u, err := os.Open(filepath.Join(store, undoName))
	if err != nil {
		return err
	}
	defer u.Close()
	for _, s := range f.Undo {
		b := make([]byte, s.Span[1]-s.Span[0])
		if _, err := u.ReadAt(b, s.At); err != nil {
			return fmt.Errorf("powerfs: the undo file lacks the pre-image of %s at %d: %w", f.Path, s.At, err)
		}
		if err := put(b, s.Span[0]); err != nil {
			return err
		}
	}
	return nil
}
