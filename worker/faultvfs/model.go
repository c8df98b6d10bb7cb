package faultvfs

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Op kinds. They are the only events that change what survives a cut:
// writes and truncations are volatile, so the model never needs them; their
// effect is captured by the content a sync makes durable.
const (
	// OpAdopt records a file that existed before the VFS saw it. Its name
	// and its content at that moment are taken as durable.
	OpAdopt = "adopt"
	// OpCreate records a new file. Neither its name nor its content is
	// durable yet.
	OpCreate = "create"
	// OpSync records an fsync of an inode: its current content becomes its
	// durable image. DirSync says the directory was synced right after,
	// as the unix VFS does on the first sync of a new journal or WAL.
	OpSync = "sync"
	// OpDelete records an unlink. DirSync says the directory was synced
	// after it, which is what makes the deletion durable.
	OpDelete = "delete"
	// OpDirSync records an fsync of the directory on its own.
	OpDirSync = "dirsync"
	// OpWrite publishes byte ranges a process wrote to an inode since it
	// last published. It changes nothing durable; it tells the next sync,
	// by any process, what to copy.
	OpWrite = "write"
)

// Span is a byte range [Start, End) of a file; End -1 is the file's end.
type Span [2]int64

// End of a Span that runs to the end of the file.
const ToEnd = -1

// Op is one recorded event, one line of the on-disk log.
type Op struct {
	Kind string `json:"op"`
	Name string `json:"name,omitempty"`
	Ino  string `json:"ino,omitempty"`
	// Img names the stored image that holds the inode's content as of
	// this op, for OpAdopt and OpSync.
	Img     string `json:"img,omitempty"`
	DirSync bool   `json:"dirsync,omitempty"`
	// Spans are the ranges an OpWrite publishes, or, for OpSync, the
	// syncing process's own writes not yet published.
	Spans []Span `json:"spans,omitempty"`
}

// Model is what a power cut leaves of one directory, as a pure function of
// the recorded ops. Names map to inodes, because a journal that is deleted
// and created again is a new inode under an old name, and the directory
// entry that survives decides which of the two comes back.
type Model struct {
	// Live is the directory as processes see it: name to inode.
	Live map[string]string `json:"live"`
	// Durable is the directory as the disk holds it: name to inode, as of
	// the last directory sync.
	Durable map[string]string `json:"durable"`
	// Images maps an inode to the stored image of its content as of its
	// last sync. An inode whose name is durable but which was never synced
	// has none and comes back empty. Inodes no name refers to any more are
	// dropped, so their images can be reused.
	Images map[string]string `json:"images"`

	// The fields below are bookkeeping for copying less at each sync;
	// they never decide what survives a cut.

	// Dirty holds, per inode, the published ranges written since its
	// image was taken.
	Dirty map[string][]Span `json:"dirty,omitempty"`
	// Spare names, per inode, the image slot still holding the image
	// before its current one, and PrevDirty the ranges that changed
	// between the two: the next sync brings that slot up to date by
	// copying PrevDirty, Dirty and its own writes instead of the file.
	Spare     map[string]string `json:"spare,omitempty"`
	PrevDirty map[string][]Span `json:"prev_dirty,omitempty"`
}

// NewModel returns the model of an empty directory.
func NewModel() Model {
	return Model{Live: map[string]string{}, Durable: map[string]string{}, Images: map[string]string{},
		Dirty: map[string][]Span{}, Spare: map[string]string{}, PrevDirty: map[string][]Span{}}
}

// Apply changes the model by one op.
func (m *Model) Apply(op Op) error {
	switch op.Kind {
	case OpAdopt:
		m.Live[op.Name] = op.Ino
		m.Durable[op.Name] = op.Ino
		m.Images[op.Ino] = op.Img
	case OpCreate:
		m.Live[op.Name] = op.Ino
	case OpWrite:
		m.Dirty[op.Ino] = MergeSpans(m.Dirty[op.Ino], op.Spans)
	case OpSync:
		if old, ok := m.Images[op.Ino]; ok && old != op.Img {
			m.Spare[op.Ino] = old
		} else {
			delete(m.Spare, op.Ino)
		}
		m.PrevDirty[op.Ino] = MergeSpans(m.Dirty[op.Ino], op.Spans)
		delete(m.Dirty, op.Ino)
		m.Images[op.Ino] = op.Img
		if op.DirSync {
			m.dirSync()
		}
	case OpDelete:
		delete(m.Live, op.Name)
		if op.DirSync {
			m.dirSync()
		}
	case OpDirSync:
		m.dirSync()
	default:
		return fmt.Errorf("unknown op %q", op.Kind)
	}
	m.prune()
	return nil
}

// prune forgets the images of inodes that neither directory names, since
// no cut can bring them back; their storage can then be reused.
func (m *Model) prune() {
	named := make(map[string]bool, len(m.Live)+len(m.Durable))
	for _, ino := range m.Live {
		named[ino] = true
	}
	for _, ino := range m.Durable {
		named[ino] = true
	}
	for ino := range m.Images {
		if !named[ino] {
			delete(m.Images, ino)
		}
	}
	for _, bk := range []map[string][]Span{m.Dirty, m.PrevDirty} {
		for ino := range bk {
			if !named[ino] {
				delete(bk, ino)
			}
		}
	}
	for ino := range m.Spare {
		if !named[ino] {
			delete(m.Spare, ino)
		}
	}
}

// UsedImages returns the images some inode still needs, spares included.
func (m *Model) UsedImages() map[string]bool {
	used := make(map[string]bool, len(m.Images)+len(m.Spare))
	for _, img := range m.Images {
		used[img] = true
	}
	for _, img := range m.Spare {
		used[img] = true
	}
	return used
}

// maxSpans bounds a span list; beyond it the list becomes one span
// covering them all, which copies more but stays correct.
const maxSpans = 256

// MergeSpans returns the union of a and b, sorted and coalesced.
func MergeSpans(a, b []Span) []Span {
	all := append(slices.Clone(a), b...)
	if len(all) == 0 {
		return nil
	}
	end := func(s Span) int64 {
		if s[1] == ToEnd {
			return math.MaxInt64
		}
		return s[1]
	}
	slices.SortFunc(all, func(x, y Span) int { return cmp.Compare(x[0], y[0]) })
	out := []Span{all[0]}
	for _, s := range all[1:] {
		last := &out[len(out)-1]
		if s[0] <= end(*last) {
			if end(s) > end(*last) {
				last[1] = s[1]
			}
			continue
		}
		out = append(out, s)
	}
	if len(out) > maxSpans {
		out = []Span{{out[0][0], out[len(out)-1][1]}}
	}
	return out
}

// dirSync makes the whole directory listing durable: an fsync of a
// directory covers every entry in it, not just the one the caller cared
// about.
func (m *Model) dirSync() {
	m.Durable = maps.Clone(m.Live)
}

// Action kinds in a recovery plan.
const (
	// ActRestore puts the durable image back under a live name.
	ActRestore = "restored"
	// ActResurrect brings back a name whose deletion was not durable.
	ActResurrect = "resurrected"
	// ActRemove removes a name that never reached the disk's directory.
	ActRemove = "removed"
)

// Action is one step of a recovery plan.
type Action struct {
	Name string
	Kind string
	// Ino is the inode whose durable content the name gets; empty for
	// ActRemove.
	Ino string
	// Image holds that content; empty when the inode was never synced, so
	// the name comes back as an empty file.
	Image string
}

// Plan lists, by name, what a power cut does to each file the model knows.
func (m *Model) Plan() []Action {
	names := map[string]bool{}
	for n := range m.Live {
		names[n] = true
	}
	for n := range m.Durable {
		names[n] = true
	}
	var plan []Action
	for _, n := range slices.Sorted(maps.Keys(names)) {
		ino, durable := m.Durable[n]
		_, live := m.Live[n]
		switch {
		case !durable:
			plan = append(plan, Action{Name: n, Kind: ActRemove})
		case live:
			plan = append(plan, Action{Name: n, Kind: ActRestore, Ino: ino, Image: m.Images[ino]})
		default:
			plan = append(plan, Action{Name: n, Kind: ActResurrect, Ino: ino, Image: m.Images[ino]})
		}
	}
	return plan
}
