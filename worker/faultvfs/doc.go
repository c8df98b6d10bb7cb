// Package faultvfs is a SQLite VFS that models power loss, so idemlab can
// ask what a committed transaction is worth when the machine, not just the
// process, goes down. A killed process loses nothing the kernel already
// has; a power cut loses everything no fsync covered.
//
// # Why a thin cgo wrapper
//
// The VFS wraps the default VFS (sqlite3_vfs_find(0)) in a few lines of C and
// forwards every method, including all xShm* methods and xFetch/xUnfetch.
// xOpen, xSync, xClose and xDelete also call into Go, writes and
// truncations only to note their range, lock releases only when there are
// ranges to publish; reads never leave C. A Go VFS library such as psanford/sqlite3vfs has no
// shared-memory methods; WAL through it needs locking_mode=EXCLUSIVE and a
// single connection, which would hide exactly the multi-connection,
// multi-process behaviour idemlab measures. The SQLite declarations the C
// code needs are in sqlite_api.h, written from SQLite's documented API; the
// symbols are the ones github.com/mattn/go-sqlite3 compiles into the binary,
// which is why this package imports it. The cgo link step that precedes the
// final link cannot see those symbols, hence the linker flag that lets them
// stay unresolved until then.
//
// # Durability model
//
// The model follows the unix VFS (os_unix.c) and POSIX fsync:
//
//   - A file's durable content is its whole content as of its last xSync.
//     Writes and truncations after it are volatile. The snapshot is of the
//     real file, so a sync by one process also makes other processes'
//     earlier writes durable, as fsync does. Under SQLite's locking no one
//     writes the database while it is synced; a WAL can grow during a
//     checkpoint's sync, and frames caught then count as durable, which a
//     real disk may also do.
//   - A sync copies only what changed since the image it replaces: every
//     write and truncation notes its byte range, each process publishes its
//     ranges to the log before it releases any SQLite lock, and the syncing
//     process brings the inode's previous image slot up to date from the
//     published ranges and its own. The image is still the whole content,
//     whoever wrote it. The one difference from copying the file: a write
//     a process never published, because it was killed between the write
//     and its next lock release, is not copied by another process's sync.
//     Under SQLite's locking such a write belongs to a transaction that
//     never committed (recovery discards it), or races the sync, which a
//     real fsync may miss as well.
//   - Names are durable only through a directory sync. As in the unix VFS,
//     the first sync through a main journal, super-journal or WAL handle
//     opened with SQLITE_OPEN_CREATE also syncs the directory; the main
//     database never does. A directory sync makes the whole listing
//     durable, so the first journal sync also makes a freshly created
//     database's name durable, with whatever content it last synced (empty
//     if none).
//   - A deletion is durable only if xDelete has dirSync set, which SQLite
//     does for journals only with synchronous=EXTRA. Otherwise the file
//     comes back after a cut with its durable content, so a DELETE-mode
//     journal returns hot and the next open rolls back a committed
//     transaction.
//   - A file the VFS first meets already existing is taken as durable with
//     its content at that moment. Baseline makes this explicit for a whole
//     folder, and is what the harness should call after preparing it. A
//     database a worker creates through the VFS is not durable until a
//     directory sync covers it.
//   - The -shm file is never durable: Recover removes it, as SQLite
//     rebuilds it from the WAL.
//
// # Fault modes
//
// What a cut does to data written since a file's last sync is the fault
// mode (Options). FaultDrop, the default, loses all of it, so its outcome
// is a function of the ops alone and an oracle can predict it exactly.
// FaultTorn follows SQLite's crash VFS (src/test6.c) and LazyFS's torn
// writes: every range written since the last sync is cut into units (512
// bytes, or a 4096-byte page) that never cross a unit boundary and never
// cover a byte no write touched, and each unit is kept, dropped or garbled
// with seeded bytes, independently (Decide), so a later write can survive
// an earlier one. It keeps SQLITE_IOCAP_POWERSAFE_OVERWRITE, which the unix
// VFS promises: bytes outside every write never change. It promises
// nothing the unix VFS does not: no atomic sectors, no ordering of writes,
// no safe appends. The torn mode applies to a file restored to the inode it
// has now; a file whose name a cut removes or brings back on another inode
// has no unsynced write that could land. FaultKeep is the other extreme:
// every write survives, synced or not, names and deletions as the
// processes left them, as after a process crash; only the -shm files go.
//
// # The audit trail
//
// Recover's Report carries the op log it replayed (names, inodes, ranges,
// syncs, deletions and directory syncs, image slots by name only) and, in
// the torn mode, the seed and every decision. Derive computes the plan and
// the decisions from that log and the options alone, so whoever holds the
// report can check that the files it lists are exactly those the log calls
// for. ReadLog reads a folder's log without cutting anything.
//
// # Cuts inside a commit
//
// ArmSyncCut stops the process inside its N-th sync through the VFS, just
// before the fsync or just after it is recorded, as test6.c crashes inside
// a chosen xSync; protocol.EnvCutAtSync is how a parent asks for it. Before
// the process stops, its unpublished write ranges are logged, so the torn
// mode sees every write. A process killed at a crash point does the same
// through PublishPending.
//
// Names map to inodes in the model (see Model), because a journal deleted
// and created again is a new file under an old name, and the directory
// entry that survives decides which one comes back.
//
// # State on disk
//
// A worker may die at any instant, so the model's state lives next to the
// files, in the folder StateDirName inside the database's folder: an
// append-only log of ops (one JSON line, one write each) and image files
// holding durable contents. The VFS finds it from the path of each file it
// opens, so nothing needs configuring. Several processes share it under an
// flock. A new image is written into storage no inode needs any more
// before the op that points at it is logged, so a process killed half-way
// leaves a consistent state. The state must only change through the VFS
// between Baseline and Recover.
//
// # Using it
//
// The parent prepares the folder, calls Baseline, and starts workers with
// protocol.EnvVFS=protocol.VFSFault; workers put sqlitedb.VFSFromEnv()
// into sqlitedb.Options.VFS, and sqlitedb.Open registers the VFS on first
// use. For a power cut the parent also sets protocol.EnvCrashKind to
// protocol.CrashKindPower; once the worker has exited it calls Recover (or
// RecoverWith, to choose the fault mode) and records the Report. Baseline and Recover use plain file I/O, which drops
// any POSIX locks the calling process holds on those files, so the caller
// must have no connection open to them.
package faultvfs

// Name is the name the VFS registers under; pass it as sqlitedb.Options.VFS.
const Name = "idemlab-faultvfs"
