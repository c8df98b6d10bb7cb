package syncmodel

import (
	"maps"
	"slices"
)

// View says what a power cut keeps of a file's writes since its last sync.
type View int

const (
	// ViewDrop keeps none of them: the content of the last sync.
	ViewDrop View = iota
	// ViewKeep keeps all of them: the live content.
	ViewKeep
	// ViewTorn keeps some units, drops others and garbles the rest.
	ViewTorn
)

// Views gives the view per file; a file not listed is ViewDrop, the drop
// fault mode's.
type Views map[string]View

// Result is what the next process finds after the cut.
type Result struct {
	// Min and Max bound the commits it finds; they are equal unless a
	// torn file leaves a range (a WAL replays up to its first bad frame).
	Min, Max int
	// RolledBack: a hot journal rolled a commit back.
	RolledBack bool
	// MayCorrupt: a torn database file is read as it is, with no journal
	// or WAL to repair it, so integrity_check may fail.
	MayCorrupt bool
	// Resurrected lists the files whose deletion a power cut undid, and
	// Removed those whose name never reached the disk, as suffixes
	// (FileJournal, FileWAL). A kill changes no name.
	Resurrected []string
	Removed     []string
	// At is the op the cut fell on, nil after the process ended.
	At *Op
}

// inode is one file's contents in the symbolic directory. written says it
// was written since its last sync, which is what the torn mode decides.
type inode struct {
	live, synced Content
	written      bool
}

// dir is the symbolic directory: names to inodes, as processes see them
// (live) and as the disk holds them (durable, as of the last directory
// sync).
type dir struct {
	live, durable map[string]int
	inodes        []inode
}

// replay applies ops to a directory holding the baselined database, with
// no commit of the process in it.
func replay(ops []Op) *dir {
	d := &dir{live: map[string]int{FileDB: 0}, durable: map[string]int{FileDB: 0}, inodes: []inode{{}}}
	for _, op := range ops {
		switch op.Kind {
		case OpCreate:
			d.inodes = append(d.inodes, inode{})
			d.live[op.File] = len(d.inodes) - 1
		case OpWrite:
			in := &d.inodes[d.live[op.File]]
			in.live, in.written = op.Content, true
		case OpSync:
			in := &d.inodes[d.live[op.File]]
			in.synced, in.written = in.live, false
			if op.DirSync {
				d.durable = maps.Clone(d.live)
			}
		case OpDelete:
			delete(d.live, op.File)
			if op.DirSync {
				d.durable = maps.Clone(d.live)
			}
		}
	}
	return d
}

// found is one variant of what the next open finds of each file.
type found map[string]Content

// cutAt replays the schedule of p under s up to the cut: the directory it
// leaves and the op the cut falls on.
func cutAt(s Setting, p Process, c Cut) (*dir, *Op, error) {
	ops, err := Schedule(s, p)
	if err != nil {
		return nil, nil, err
	}
	done, at, err := prefix(ops, c)
	if err != nil {
		return nil, nil, err
	}
	return replay(done), at, nil
}

// Dirty lists the files a torn cut at c decides: those that keep their
// inode through the cut and were written since their last sync. A view
// given for any other file changes nothing.
func Dirty(s Setting, p Process, c Cut) ([]string, error) {
	d, _, err := cutAt(s, p, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(d.live)) {
		if ino, ok := d.durable[n]; ok && ino == d.live[n] && d.inodes[ino].written {
			out = append(out, n)
		}
	}
	return out, nil
}

// PowerCut is what a power cut at c leaves of the process p under s, each
// file kept as views says.
func PowerCut(s Setting, p Process, c Cut, views Views) (Result, error) {
	d, at, err := cutAt(s, p, c)
	if err != nil {
		return Result{}, err
	}
	r := Result{At: at}
	variants := []found{{}}
	names := slices.Sorted(maps.Keys(unionKeys(d.live, d.durable)))
	for _, n := range names {
		ino, durable := d.durable[n]
		liveIno, live := d.live[n]
		switch {
		case !durable:
			r.Removed = append(r.Removed, n)
			continue
		case !live:
			r.Resurrected = append(r.Resurrected, n)
		}
		in := d.inodes[ino]
		if !live || liveIno != ino || views[n] == ViewDrop {
			for _, v := range variants {
				v[n] = in.synced
			}
			continue
		}
		if views[n] == ViewKeep || in.live == in.synced {
			for _, v := range variants {
				v[n] = in.live
			}
			continue
		}
		// Torn: the next open may find either end, or, for a WAL,
		// anything between, which Min and Max bound.
		var more []found
		for _, v := range variants {
			a, b := maps.Clone(v), maps.Clone(v)
			a[n], b[n] = in.synced, in.live
			more = append(more, a, b)
		}
		variants = more
	}
	r.fold(variants)
	r.MayCorrupt = views[FileDB] == ViewTorn && !repaired(d, variants)
	return r, nil
}

// repaired reports whether the database's unsynced pages, were a torn cut
// to mix them with synced ones, are always rewritten by the next open: a
// hot journal holding their original pages, or WAL frames carrying their
// commit. With nothing unsynced there is nothing to repair.
func repaired(d *dir, variants []found) bool {
	db := d.inodes[d.live[FileDB]]
	if db.live == db.synced {
		return true
	}
	for _, v := range variants {
		j, w := v[FileJournal], v[FileWAL]
		byJournal := j.Commit == db.live.Commit && db.synced.Commit >= j.Commit-1
		byWAL := w.Header && w.Commit >= db.live.Commit
		if !byJournal && !byWAL {
			return false
		}
	}
	return true
}

// Kill is what a kill at c leaves: every file as the process left it in
// the kernel, every name as it was.
func Kill(s Setting, p Process, c Cut) (Result, error) {
	d, at, err := cutAt(s, p, c)
	if err != nil {
		return Result{}, err
	}
	v := found{}
	for n, ino := range d.live {
		v[n] = d.inodes[ino].live
	}
	r := Result{At: at}
	r.fold([]found{v})
	return r, nil
}

// fold runs the next open's recovery on every variant and sums them up.
func (r *Result) fold(variants []found) {
	for i, v := range variants {
		n, rolled := recoverFiles(v)
		if i == 0 || n < r.Min {
			r.Min = n
		}
		if i == 0 || n > r.Max {
			r.Max = n
		}
		r.RolledBack = r.RolledBack || rolled
	}
}

// recoverFiles is SQLite's recovery on open: a hot journal rolls back its
// commit, the WAL's frames replay over the database. It returns the commits
// found and whether a journal rolled one back.
func recoverFiles(have map[string]Content) (commits int, rolled bool) {
	db := have[FileDB].Commit
	if j, ok := have[FileJournal]; ok && j.Commit > 0 {
		// The journal holds the original pages of commit j.Commit, which
		// the database has (all of them) or not yet (none).
		db, rolled = j.Commit-1, true
	}
	if w, ok := have[FileWAL]; ok && w.Header && w.Commit > db {
		db = w.Commit
	}
	return db, rolled
}

func unionKeys(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
