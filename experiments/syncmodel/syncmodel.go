// Package syncmodel is an abstract model of SQLite's sync schedule: which
// file operations one process's commits make under each journal_mode ×
// synchronous × locking_mode, and what a power cut or a kill at any point
// of that schedule leaves of its commits. It is the durability oracle's
// source, so it takes the settings and the shape of the process only,
// never what a run recorded.
//
// It is written from SQLite's documentation (pragma.html, wal.html,
// atomiccommit.html) and its source, SQLite 3.54.1 as compiled into
// mattn/go-sqlite3 (pager.c, wal.c, os_unix.c):
//
//   - Rollback journal (DELETE). A transaction creates the journal and
//     writes the original pages into it as it changes them. At commit it
//     syncs the journal (FULL and EXTRA: the content, then the header with
//     the record count, two syncs; NORMAL: one), writes the database and
//     syncs it, and deletes the journal, syncing the directory only under
//     EXTRA (pager_end_transaction passes extraSync to xDelete). OFF syncs
//     nothing.
//   - locking_mode=EXCLUSIVE with a rollback journal keeps the journal: at
//     commit its header is zeroed and synced (zeroJournalHdr) instead of
//     the file being deleted. Closing syncs it once more
//     (pagerSyncHotJournal) and deletes it, with a directory sync only under
//     EXTRA.
//   - WAL. The WAL file is created when the connection first reads. The
//     first commit writes the WAL header and syncs it unless OFF; each
//     commit appends frames, synced at commit only under FULL and EXTRA
//     (walSyncFlags). Closing the last connection checkpoints: it syncs the
//     WAL, writes the database and syncs it (not under OFF), then deletes
//     the WAL without a directory sync. A connection that is not the last
//     one, because another holds a read connection open, checkpoints
//     nothing and deletes nothing.
//   - The unix VFS syncs the directory on the first sync of a journal or
//     WAL it created (UNIXFILE_DIRSYNC), never for the database file.
//
// The model's file contents are symbolic: a database holds the number of
// commits applied to it, a journal the commit it can roll back (0 when it
// is empty or zeroed), a WAL whether its header was written and the last
// commit its frames carry. A cut keeps, per file, the content of its last
// sync (ViewDrop), its live content (ViewKeep), or anything the torn mode
// can make of the two (ViewTorn); names follow the directory syncs. Then
// the next open's recovery runs: a hot journal rolls its commit back, and a
// WAL's frames are replayed over the database.
package syncmodel

import (
	"fmt"
	"slices"
)

// Setting is how the process opened its file.
type Setting struct {
	// JournalMode is DELETE or WAL.
	JournalMode string
	// Synchronous is OFF, NORMAL, FULL or EXTRA.
	Synchronous string
	// Exclusive is locking_mode=EXCLUSIVE.
	Exclusive bool
}

// End is how the process stops after its last commit.
type End string

const (
	// EndClose: it closes its connection, the last one to the file.
	EndClose End = "close"
	// EndOpen: it exits with the connection open, at a crash point or
	// after an ACK with the connection open.
	EndOpen End = "open"
	// EndReader: it closes its connection while another process holds a
	// read connection open, so its close is not the last one.
	EndReader End = "reader"
)

// Process is the shape of the process the cut falls on.
type Process struct {
	// Commits is how many transactions it commits.
	Commits int
	// InTx says it stopped inside the next transaction, after changing a
	// page: a rollback journal holds that transaction's original pages.
	// Only with EndOpen.
	InTx bool
	End  End
}

// Files, by the suffix SQLite adds to the database's name.
const (
	FileDB      = ""
	FileJournal = "-journal"
	FileWAL     = "-wal"
)

// OpKind is the kind of one file operation.
type OpKind string

// File operation kinds.
const (
	OpCreate OpKind = "create"
	OpWrite  OpKind = "write"
	OpSync   OpKind = "sync"
	OpDelete OpKind = "delete"
)

// Content is a file's symbolic content.
type Content struct {
	// Commit is, for the database, the commits applied; for a journal,
	// the commit it rolls back (0: not hot); for a WAL, the last commit
	// its frames carry.
	Commit int
	// Header says a WAL's header was written; a WAL without one is
	// ignored.
	Header bool
}

// Op is one file operation of the schedule.
type Op struct {
	Kind    OpKind
	File    string
	Content Content
	// DirSync: a sync that also syncs the directory, or a deletion made
	// durable by one.
	DirSync bool
	// Commit is the transaction the op belongs to, from 1; Commits+1 for
	// the ops of the close.
	Commit int
}

// Validate refuses settings and shapes the model does not cover.
func Validate(s Setting, p Process) error {
	if s.JournalMode != "DELETE" && s.JournalMode != "WAL" {
		return fmt.Errorf("syncmodel: journal_mode %q: want DELETE or WAL", s.JournalMode)
	}
	if !slices.Contains([]string{"OFF", "NORMAL", "FULL", "EXTRA"}, s.Synchronous) {
		return fmt.Errorf("syncmodel: synchronous %q: want OFF, NORMAL, FULL or EXTRA", s.Synchronous)
	}
	switch {
	case p.Commits < 0:
		return fmt.Errorf("syncmodel: %d commits", p.Commits)
	case p.End != EndClose && p.End != EndOpen && p.End != EndReader:
		return fmt.Errorf("syncmodel: end %q", p.End)
	case p.InTx && p.End != EndOpen:
		return fmt.Errorf("syncmodel: a process inside a transaction ends with its connection open, not %q", p.End)
	case p.End == EndReader && s.Exclusive:
		return fmt.Errorf("syncmodel: locking_mode=EXCLUSIVE admits no other connection, so no reader")
	}
	return nil
}

// schedule builds the file operations in order, tracking which journal or
// WAL inode has been synced, since its first sync also syncs the directory.
type schedule struct {
	s   Setting
	ops []Op
	// fresh is set for a journal or WAL created and not synced since.
	fresh map[string]bool
	// open: the exclusive journal, once created, stays open.
	open bool
	// frames: the WAL has a header and frames.
	frames bool
}

func (b *schedule) add(op Op) {
	if op.Kind == OpCreate {
		b.fresh[op.File] = true
	}
	if op.Kind == OpSync && b.fresh[op.File] {
		op.DirSync = true
		b.fresh[op.File] = false
	}
	b.ops = append(b.ops, op)
}

func (b *schedule) syncs() bool { return b.s.Synchronous != "OFF" }
func (b *schedule) full() bool  { return b.s.Synchronous == "FULL" || b.s.Synchronous == "EXTRA" }
func (b *schedule) extra() bool { return b.s.Synchronous == "EXTRA" }
func (b *schedule) sync(f string, k int) {
	if b.syncs() {
		b.add(Op{Kind: OpSync, File: f, Commit: k})
	}
}

// begin is transaction k up to its first changed page: a rollback journal
// is created (or reused, in exclusive mode) and holds the original pages.
func (b *schedule) begin(k int) {
	if b.s.JournalMode == "WAL" {
		return
	}
	if !b.s.Exclusive || !b.open {
		b.add(Op{Kind: OpCreate, File: FileJournal, Commit: k})
		b.open = true
	}
	b.add(Op{Kind: OpWrite, File: FileJournal, Content: Content{Commit: k}, Commit: k})
}

// commit is the rest of transaction k.
func (b *schedule) commit(k int) {
	if b.s.JournalMode == "WAL" {
		if !b.frames {
			b.add(Op{Kind: OpWrite, File: FileWAL, Content: Content{Header: true}, Commit: k})
			b.sync(FileWAL, k)
			b.frames = true
		}
		b.add(Op{Kind: OpWrite, File: FileWAL, Content: Content{Header: true, Commit: k}, Commit: k})
		if b.full() {
			b.sync(FileWAL, k)
		}
		return
	}
	if b.full() {
		// The content first, then the header's record count: a write that
		// leaves the symbolic content as it is.
		b.sync(FileJournal, k)
		b.add(Op{Kind: OpWrite, File: FileJournal, Content: Content{Commit: k}, Commit: k})
	}
	b.sync(FileJournal, k)
	b.add(Op{Kind: OpWrite, File: FileDB, Content: Content{Commit: k}, Commit: k})
	b.sync(FileDB, k)
	if b.s.Exclusive {
		b.add(Op{Kind: OpWrite, File: FileJournal, Content: Content{}, Commit: k})
		b.sync(FileJournal, k)
		return
	}
	b.add(Op{Kind: OpDelete, File: FileJournal, DirSync: b.extra(), Commit: k})
	b.open = false
}

// close is the connection's close, the last one to the file.
func (b *schedule) close(k int) {
	switch {
	case b.s.JournalMode == "WAL":
		if b.frames {
			b.sync(FileWAL, k)
			b.add(Op{Kind: OpWrite, File: FileDB, Content: Content{Commit: k - 1}, Commit: k})
			b.sync(FileDB, k)
		}
		b.add(Op{Kind: OpDelete, File: FileWAL, Commit: k})
	case b.s.Exclusive && b.open:
		b.sync(FileJournal, k)
		b.add(Op{Kind: OpDelete, File: FileJournal, DirSync: b.extra(), Commit: k})
	}
}

// Schedule lists the process's file operations in order.
func Schedule(s Setting, p Process) ([]Op, error) {
	if err := Validate(s, p); err != nil {
		return nil, err
	}
	b := &schedule{s: s, fresh: map[string]bool{}}
	if s.JournalMode == "WAL" {
		b.add(Op{Kind: OpCreate, File: FileWAL, Commit: 1})
	}
	for k := 1; k <= p.Commits; k++ {
		b.begin(k)
		b.commit(k)
	}
	switch {
	case p.InTx:
		b.begin(p.Commits + 1)
	case p.End == EndClose:
		b.close(p.Commits + 1)
	}
	return b.ops, nil
}

// Syncs counts the syncs of the schedule: the cut points a sweep tries.
func Syncs(s Setting, p Process) (int, error) {
	ops, err := Schedule(s, p)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, op := range ops {
		if op.Kind == OpSync {
			n++
		}
	}
	return n, nil
}

// Cut is where the process stops: after its end (Sync 0), or inside its
// Sync-th sync, just before the fsync or just after it.
type Cut struct {
	Sync  int
	After bool
}

// prefix returns the ops up to the cut and the op the cut falls on.
func prefix(ops []Op, c Cut) ([]Op, *Op, error) {
	if c.Sync == 0 {
		return ops, nil, nil
	}
	n := 0
	for i, op := range ops {
		if op.Kind != OpSync {
			continue
		}
		if n++; n == c.Sync {
			if c.After {
				return ops[:i+1], &ops[i], nil
			}
			return ops[:i], &ops[i], nil
		}
	}
	return nil, nil, fmt.Errorf("syncmodel: sync %d, but the schedule syncs %d times", c.Sync, n)
}
