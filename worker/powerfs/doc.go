// Package powerfs is a power-loss filesystem for any process: a FUSE
// mount that passes every operation through to a backing folder and keeps,
// per file and per directory, what is durable, so a cut can rebuild the
// folder as a power failure would leave it. It is the fault VFS's model
// (package faultvfs) moved to the boundary every program shares.
//
// # Processes
//
// The mount is served by a re-executed idemlab process ("idemlab worker
// powerfs.serve"), never by the harness: a Go process that touches a
// FUSE mount it serves can deadlock (golang/go#21014). Start runs it in
// its own process group and waits for "mounted" on its stdout; the parent
// then reads only the backing folder and the server's store. One mount per
// trial. The mount is made with mount(2) directly (DirectMount, as root)
// and allow_other; FUSE passthrough is off, so every write reaches the
// server. Missing says what the machine lacks when FUSE is not there.
//
// # What the server keeps
//
// Under one lock, each change is logged (the op log, one JSON line per
// op: names with their directory's inode, inodes, offsets and lengths,
// syncs, entry operations, never data) and, before it overwrites durable
// bytes for the first time since the file's last sync, their pre-image is
// appended to the store's undo file (one per mount; the log says where
// each lies), as LazyFS keeps unsynced data in its own cache. A file a
// name change removes is linked into the store first, so a cut can bring
// it back. A file's durable bytes are its bytes at its last fsync or
// fdatasync (at the mount's start, for a file that was there); its
// durable size is its size then.
//
// # Models
//
// Plan replays a log into what a cut leaves, with no file read, so a fold
// and verify can derive it again. The data model decides the bytes
// written or truncated since a file's last sync, in the units of
// faultvfs.Units:
//
//	drop  every unit lost: the file holds its durable bytes and size
//	keep  every unit kept, and every name as the processes left it
//	      (the directory model does not apply): a process crash
//	torn  each unit kept, dropped or garbled by faultvfs.Decide from the
//	      seed, the file's surviving path and the unit's offset; 512 B
//	      (a sector) or 4 KiB (a page)
//
// The directory model decides which names survive under drop and torn:
//
//	operation                         posix (default)         ext4-ordered
//	create, mkdir, symlink, mknod     after fsync(dir)        also after fsync(the new file
//	                                                          or directory itself)
//	link                              after fsync(dir)        also after fsync(the file)
//	unlink, rmdir                     after fsync(dir)        also after fsync(the removed
//	                                                          file or directory, still open)
//	rename, exchange                  after fsync(each dir)   also after fsync(the moved file):
//	                                                          its new name in, its old name out;
//	                                                          an exchange swaps both names at
//	                                                          fsync(either file)
//	fsync(dir)                        the directory's whole   the same, and the entries naming
//	                                  live listing durable    it and each directory above it
//	fsync(file)                       its bytes and size      also the entries naming it and
//	                                                          each directory above it, up to
//	                                                          the root
//
// The help topic "durability" holds the same table, and TestDirModelRows
// tests each of its rows.
//
// A name that survives brings back its inode with that inode's durable
// bytes (drop), even if it was unlinked; a name that does not survive
// goes, even if its data was synced. A directory that survives holds its
// own durable listing.
//
// # Cuts
//
// A cut point is before or after the N-th sync of the mount (fsync,
// fdatasync and a directory's fsync all count, in the order the server
// answers them), or a command. At a sync cut the server logs the cut,
// stops answering every later change and tells the parent ("cut AT N
// PID"); on a command it does the same at once. The parent first SIGKILLs
// the process groups that use the mount (Mount.Cut), then the server
// unmounts, rebuilds the backing folder from the log and the store
// (Recover: Plan, then Rebuild) and exits. If the server died, the parent
// detaches the mount and runs Recover itself.
//
// # Nothing left mounted
//
// Close unmounts after a pass; a dead server's mount (ENOTCONN) is
// detached with MNT_DETACH; a harness that dies closes the server's stdin,
// on which it unmounts; Sweep clears mounts of type fuse.idemlab-powerfs
// whose server is gone and says so.
//
// # What it cannot see
//
// The device's own cache; writes through a shared mmap until the kernel
// writes them back through the mount; and O_TMPFILE files, which it
// refuses.
package powerfs
