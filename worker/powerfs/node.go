package powerfs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is go-fuse's loopback node with every change that a cut can undo
// noted first: each logs its op and saves what it overwrites under the
// server's lock, so the log, the store and the backing folder move
// together and a freeze falls between two ops.
type node struct {
	*gofs.LoopbackNode
	srv *server
}

var (
	_ gofs.NodeWrapChilder    = (*node)(nil)
	_ gofs.NodeWriter         = (*node)(nil)
	_ gofs.NodeFsyncer        = (*node)(nil)
	_ gofs.NodeSetattrer      = (*node)(nil)
	_ gofs.NodeAllocater      = (*node)(nil)
	_ gofs.NodeCopyFileRanger = (*node)(nil)
	_ gofs.NodeCreater        = (*node)(nil)
	_ gofs.NodeMkdirer        = (*node)(nil)
	_ gofs.NodeMknoder        = (*node)(nil)
	_ gofs.NodeSymlinker      = (*node)(nil)
	_ gofs.NodeLinker         = (*node)(nil)
	_ gofs.NodeUnlinker       = (*node)(nil)
	_ gofs.NodeRmdirer        = (*node)(nil)
	_ gofs.NodeRenamer        = (*node)(nil)
	_ gofs.NodeTmpfiler       = (*node)(nil)
	_ gofs.NodeOpener         = (*node)(nil)
	_ gofs.NodeOpendirHandler = (*node)(nil)
)

// WrapChild makes every node the loopback creates one of ours.
func (n *node) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*gofs.LoopbackNode), srv: n.srv}
}

func (n *node) ino() uint64 {
	if n.IsRoot() {
		return n.srv.rootIno
	}
	return n.StableAttr().Ino
}

func (n *node) backing(name ...string) string {
	return filepath.Join(append([]string{n.srv.cfg.Backing, n.Path(nil)}, name...)...)
}

// Write saves the durable bytes it overwrites, logs, then writes.
func (n *node) Write(ctx context.Context, f gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ino := n.ino()
	saves := s.st.toSave(ino, off, off+int64(len(data)))
	at, err := s.save(n.backing(), f, saves)
	if err != nil {
		return 0, errno(err)
	}
	if err := s.logOp(Op{Kind: OpWrite, Ino: ino, Off: off, Len: int64(len(data)), Saved: saves, UndoAt: at, Pid: pidOf(ctx)}); err != nil {
		return 0, syscall.EIO
	}
	w, ok := f.(gofs.FileWriter)
	if !ok {
		return 0, syscall.EBADF
	}
	return w.Write(ctx, data, off)
}

// Fsync is a file's fsync or fdatasync, or a directory's fsync: the point
// where bytes or entries become durable, and where a sync cut falls.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	s := n.srv
	s.enter()
	num := s.st.syncs + 1
	pid := pidOf(ctx)
	if num == s.cfg.CutSync && !s.cfg.CutAfter {
		s.freezeLocked("before", num, pid)
		s.stall()
	}
	defer s.mu.Unlock()
	ino := n.ino()
	dir := n.IsRoot() || n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFDIR
	op := Op{Kind: OpFsync, Ino: ino, Sync: num, Data: flags&1 != 0, Pid: pid}
	if dir {
		op.Kind = OpFsyncDir
		if d, ok := f.(*dirHandle); ok {
			if e := d.loopDir.Fsyncdir(ctx, flags); e != 0 {
				return e
			}
		} else if e := fsyncPath(n.backing()); e != 0 {
			return e
		}
	} else {
		if fs, ok := f.(gofs.FileFsyncer); ok {
			if e := fs.Fsync(ctx, flags); e != 0 {
				return e
			}
		} else if e := fsyncPath(n.backing()); e != 0 {
			return e
		}
		var st syscall.Stat_t
		if e := fstatHandle(f, &st); e != 0 {
			if err := syscall.Lstat(n.backing(), &st); err != nil {
				return errno(err)
			}
		}
		op.Size = st.Size
	}
	if err := s.logOp(op); err != nil {
		return syscall.EIO
	}
	if num == s.cfg.CutSync && s.cfg.CutAfter {
		s.freezeLocked("after", num, pid)
		s.mu.Unlock()
		<-s.hold
	}
	return 0
}

func fsyncPath(p string) syscall.Errno {
	h, err := os.Open(p)
	if err != nil {
		return errno(err)
	}
	defer h.Close()
	return errno(h.Sync())
}

func fstatHandle(f gofs.FileHandle, st *syscall.Stat_t) syscall.Errno {
	if fd, ok := fdOf(f); ok {
		return errno(syscall.Fstat(fd, st))
	}
	return syscall.EBADF
}

// Setattr logs a truncation; other attributes pass through unmodelled.
func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, ok := in.GetSize()
	if !ok {
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	}
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ino := n.ino()
	var saves []Span
	if in, ok := s.st.inodes[ino]; ok {
		saves = s.st.toSave(ino, int64(size), in.size)
	}
	at, err := s.save(n.backing(), f, saves)
	if err != nil {
		return errno(err)
	}
	if err := s.logOp(Op{Kind: OpTrunc, Ino: ino, Size: int64(size), Saved: saves, UndoAt: at, Pid: pidOf(ctx)}); err != nil {
		return syscall.EIO
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// Allocate is a write of its range unless it keeps the size and only
// reserves space.
func (n *node) Allocate(ctx context.Context, f gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	a, ok := f.(gofs.FileAllocater)
	if !ok {
		return syscall.ENOTSUP
	}
	const keepSize, changes = 0x01, 0x02 | 0x08 | 0x10 | 0x20 | 0x40 // FALLOC_FL_*
	if mode&keepSize != 0 && mode&changes == 0 {
		return a.Allocate(ctx, off, size, mode)
	}
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ino := n.ino()
	saves := s.st.toSave(ino, int64(off), int64(off+size))
	at, err := s.save(n.backing(), f, saves)
	if err != nil {
		return errno(err)
	}
	if err := s.logOp(Op{Kind: OpWrite, Ino: ino, Off: int64(off), Len: int64(size), Saved: saves, UndoAt: at, Pid: pidOf(ctx)}); err != nil {
		return syscall.EIO
	}
	return a.Allocate(ctx, off, size, mode)
}

// CopyFileRange is refused, so the kernel copies through reads and writes
// the model sees.
func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Tmpfile is refused: a file with no name has no entry to model.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// created logs a new entry once the loopback made it.
func (n *node) created(ctx context.Context, kind, typ, name string, mode uint32, out *fuse.EntryOut) syscall.Errno {
	if err := n.srv.logOp(Op{Kind: kind, Dir: n.ino(), Name: name, Ino: out.Attr.Ino, Type: typ, Mode: mode & 0o7777, Pid: pidOf(ctx)}); err != nil {
		return syscall.EIO
	}
	return 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ch, fh, ff, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	fh = wrap(fh)
	if e == 0 {
		e = n.created(ctx, OpCreate, TypeFile, name, mode, out)
	}
	return ch, fh, ff, e
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ch, e := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if e == 0 {
		e = n.created(ctx, OpMkdir, TypeDir, name, mode, out)
	}
	return ch, e
}

func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ch, e := n.LoopbackNode.Mknod(ctx, name, mode, dev, out)
	if e == 0 {
		e = n.created(ctx, OpCreate, TypeFile, name, mode, out)
	}
	return ch, e
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ch, e := n.LoopbackNode.Symlink(ctx, target, name, out)
	if e == 0 {
		e = n.created(ctx, OpCreate, TypeSymlink, name, 0o777, out)
	}
	return ch, e
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	ch, e := n.LoopbackNode.Link(ctx, target, name, out)
	if e == 0 {
		if err := s.logOp(Op{Kind: OpLink, Dir: n.ino(), Name: name, Ino: out.Attr.Ino, Pid: pidOf(ctx)}); err != nil {
			return ch, syscall.EIO
		}
	}
	return ch, e
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	// The stash keeps the inode, so unlinking before the log says so
	// loses nothing if the server dies in between.
	ino, err := s.stash(n.backing(name))
	if err != nil {
		return errno(err)
	}
	if e := n.LoopbackNode.Unlink(ctx, name); e != 0 {
		return e
	}
	if err := s.logOp(Op{Kind: OpUnlink, Dir: n.ino(), Name: name, Ino: ino, Pid: pidOf(ctx)}); err != nil {
		return syscall.EIO
	}
	return 0
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Lstat(n.backing(name), &st); err != nil {
		return errno(err)
	}
	// Only an empty directory goes; ask the disk before the log says so.
	if e := n.LoopbackNode.Rmdir(ctx, name); e != 0 {
		return e
	}
	if err := s.logOp(Op{Kind: OpRmdir, Dir: n.ino(), Name: name, Ino: st.Ino, Pid: pidOf(ctx)}); err != nil {
		return syscall.EIO
	}
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	s := n.srv
	s.enter()
	defer s.mu.Unlock()
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(n.backing(name), &st); err != nil {
		return errno(err)
	}
	const exchange, noReplace = 0x2, 0x1 // RENAME_EXCHANGE, RENAME_NOREPLACE
	op := Op{Kind: OpRename, Dir: n.ino(), Name: name, Dir2: np.ino(), Name2: newName, Ino: st.Ino, Pid: pidOf(ctx)}
	if flags&exchange != 0 {
		op.Kind = OpExchange
	} else if flags&noReplace == 0 {
		if _, err := os.Lstat(np.backing(newName)); err == nil {
			if _, err := s.stash(np.backing(newName)); err != nil {
				return errno(err)
			}
		}
	}
	if e := n.LoopbackNode.Rename(ctx, name, np, newName, flags); e != 0 {
		return e
	}
	if err := s.logOp(op); err != nil {
		return syscall.EIO
	}
	return 0
}

// handle is the loopback's open file with the kernel's FUSE passthrough
// turned off: with it, reads and writes would go to the backing file
// without the server seeing them.
type handle struct {
	*gofs.LoopbackFile
}

// PassthroughFd refuses passthrough.
func (h *handle) PassthroughFd() (int, bool) { return 0, false }

// fdOf is the backing descriptor of an open file, if it has one.
func fdOf(f gofs.FileHandle) (int, bool) {
	if h, ok := f.(*handle); ok {
		return h.LoopbackFile.PassthroughFd()
	}
	return 0, false
}

// wrap hides the passthrough of a file the loopback opened.
func wrap(f gofs.FileHandle) gofs.FileHandle {
	if lf, ok := f.(*gofs.LoopbackFile); ok {
		return &handle{lf}
	}
	return f
}

// Open opens the backing file, without passthrough.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, ff, e := n.LoopbackNode.Open(ctx, flags)
	return wrap(fh), ff, e
}

// loopDir is what go-fuse's loopback directory stream offers.
type loopDir interface {
	gofs.DirStream
	gofs.FileReaddirenter
	gofs.FileSeekdirer
	gofs.FileReleasedirer
	gofs.FileFsyncdirer
}

// dirHandle is an open directory whose fsync the server sees: the
// loopback's own stream would answer FSYNCDIR without the node.
type dirHandle struct {
	loopDir
	n *node
}

// Fsyncdir is the directory's fsync.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.n.Fsync(ctx, d, flags)
}

// OpendirHandle opens the backing directory behind a dirHandle.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, ff, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if ld, ok := fh.(loopDir); ok && e == 0 {
		return &dirHandle{loopDir: ld, n: n}, ff, 0
	}
	return fh, ff, e
}

// Getxattr answers ENOSYS, which the kernel remembers: without it, it
// asks for security.capability before every write, a round trip each.
// The mount has no extended attributes.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Setxattr: the mount has no extended attributes.
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOSYS
}

// Listxattr: the mount has no extended attributes.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Removexattr: the mount has no extended attributes.
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return syscall.ENOSYS
}
