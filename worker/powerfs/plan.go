package powerfs

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"idemlab/worker/faultvfs"
)

// Span is a byte range [start, end) of a file; an end of faultvfs.ToEnd is
// a truncation to start. It is the fault VFS's type, so both layers tear
// the same units.
type Span = faultvfs.Span

// Data models: what a cut does to bytes written since a file's last sync.
const (
	ModelDrop = faultvfs.FaultDrop
	ModelKeep = faultvfs.FaultKeep
	ModelTorn = faultvfs.FaultTorn
)

// Directory models: when an entry change becomes durable.
const (
	// DirPOSIX: only an fsync of the directory makes its entries durable.
	DirPOSIX = "posix"
	// DirExt4: as DirPOSIX, and an fsync of a file also makes durable the
	// entries that name it, and those of its directories up to the root,
	// as ext4's data=ordered journal commit does.
	DirExt4 = "ext4-ordered"
)

// Op kinds of the log.
const (
	OpBase     = "base"     // an entry present when the mount started
	OpCreate   = "create"   // a new file, symlink or device node
	OpMkdir    = "mkdir"    // a new directory
	OpLink     = "link"     // a new name for Ino
	OpUnlink   = "unlink"   // a name removed (Ino is the file it named)
	OpRmdir    = "rmdir"    // a directory removed
	OpRename   = "rename"   // Dir/Name moved to Dir2/Name2, replacing what it named
	OpExchange = "exchange" // Dir/Name and Dir2/Name2 swapped (RENAME_EXCHANGE)
	OpWrite    = "write"    // Len bytes at Off
	OpTrunc    = "trunc"    // the size set to Size
	OpFsync    = "fsync"    // a file's fsync or fdatasync (Data)
	OpFsyncDir = "fsyncdir" // a directory's fsync
	OpCut      = "cut"      // the cut: At is before, after or command
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Op is one line of a mount's op log. It carries no data: a write's bytes
// stay in the backing folder, and the pre-images of overwritten durable
// bytes in the server's store, at the places Saved lists.
type Op struct {
	Seq   int    `json:"seq"`
	Kind  string `json:"op"`
	Ino   uint64 `json:"ino,omitempty"`
	Dir   uint64 `json:"dir,omitempty"`
	Name  string `json:"name,omitempty"`
	Dir2  uint64 `json:"dir2,omitempty"`
	Name2 string `json:"name2,omitempty"`
	Type  string `json:"type,omitempty"`
	Mode  uint32 `json:"mode,omitempty"`
	Off   int64  `json:"off,omitempty"`
	Len   int64  `json:"len,omitempty"`
	// Size: a base entry's or a synced file's size, a truncation's new
	// size.
	Size int64 `json:"size,omitempty"`
	// Saved lists the durable bytes a write or truncation overwrote for
	// the first time since the file's last sync; their pre-images follow
	// one another in the store's undo file from UndoAt.
	Saved  []Span `json:"saved,omitempty"`
	UndoAt int64  `json:"undo_at,omitempty"`
	// Sync numbers the fsyncs and directory fsyncs over the mount, from 1.
	Sync int  `json:"sync,omitempty"`
	Data bool `json:"data,omitempty"`
	// At says where a cut fell: "before" or "after" sync Sync, or
	// "command".
	At string `json:"at,omitempty"`
	// Pid is the process that asked for the op, where FUSE says.
	Pid int `json:"pid,omitempty"`
}

// ReadLog parses an op log, one JSON object a line. A last line cut short
// by a kill is dropped: its op never ran, since an op is logged before it
// runs and each line is one write.
func ReadLog(r io.Reader) ([]Op, error) {
	var out []Op
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(line, &op); err != nil {
			if !strings.HasSuffix(string(line), "}") {
				break
			}
			return nil, fmt.Errorf("powerfs: log line %d: %w", len(out)+1, err)
		}
		out = append(out, op)
	}
	return out, sc.Err()
}

// inode is one file or directory of the replayed model.
type inode struct {
	typ  string
	mode uint32
	// size is the durable size: at the mount's start or the last sync.
	size int64
	// spans are the ranges written or truncated since the last sync.
	spans []Span
	// saved are the durable ranges whose pre-images the undo file holds
	// since the last sync.
	saved []Undo
	// A directory's entries as processes see them, and as the disk holds
	// them.
	live, durable map[string]uint64
}

// state is the model a log replays into; the server keeps the same one
// as it serves, so what it saves and what Plan derives cannot disagree.
type state struct {
	inodes   map[uint64]*inode
	root     uint64
	syncs    int
	dirModel string
	cut      *Op
	// exchanged pairs the inodes an exchange swapped whose names no
	// fsync under ext4's model has made durable yet: one change of the
	// journal, durable together.
	exchanged map[uint64]uint64
}

func newState(dirModel string) *state {
	return &state{inodes: map[uint64]*inode{}, dirModel: dirModel, exchanged: map[uint64]uint64{}}
}

func (s *state) dir(ino uint64) (*inode, error) {
	d, ok := s.inodes[ino]
	if !ok || d.typ != TypeDir {
		return nil, fmt.Errorf("powerfs: no directory with inode %d", ino)
	}
	return d, nil
}

func (s *state) file(ino uint64) (*inode, error) {
	f, ok := s.inodes[ino]
	if !ok {
		return nil, fmt.Errorf("powerfs: no inode %d", ino)
	}
	return f, nil
}

func newInode(typ string, mode uint32, size int64) *inode {
	in := &inode{typ: typ, mode: mode, size: size}
	if typ == TypeDir {
		in.live, in.durable = map[string]uint64{}, map[string]uint64{}
	}
	return in
}

// toSave is what a change of [a, b) must save first: the durable bytes in
// it whose pre-image this epoch has not saved yet.
func (s *state) toSave(ino uint64, a, b int64) []Span {
	in, ok := s.inodes[ino]
	if !ok {
		return nil
	}
	b = min(b, in.size)
	if a >= b {
		return nil
	}
	out := []Span{{a, b}}
	for _, u := range in.saved {
		c := u.Span
		var next []Span
		for _, r := range out {
			if c[1] <= r[0] || c[0] >= r[1] {
				next = append(next, r)
				continue
			}
			if r[0] < c[0] {
				next = append(next, Span{r[0], c[0]})
			}
			if c[1] < r[1] {
				next = append(next, Span{c[1], r[1]})
			}
		}
		out = next
	}
	return out
}

// addSpan merges a written range into a file's unsynced ranges.
func addSpan(spans []Span, s Span) []Span {
	if s[1] == faultvfs.ToEnd {
		for i, t := range spans {
			if t[1] == faultvfs.ToEnd {
				spans[i][0] = min(t[0], s[0])
				return spans
			}
		}
		return append(spans, s)
	}
	if s[0] >= s[1] {
		return spans
	}
	var out []Span
	for _, t := range spans {
		if t[1] != faultvfs.ToEnd && t[0] <= s[1] && s[0] <= t[1] {
			s = Span{min(s[0], t[0]), max(s[1], t[1])}
			continue
		}
		out = append(out, t)
	}
	out = append(out, s)
	slices.SortFunc(out, func(a, b Span) int {
		if (a[1] == faultvfs.ToEnd) != (b[1] == faultvfs.ToEnd) {
			if a[1] == faultvfs.ToEnd {
				return 1
			}
			return -1
		}
		return int(a[0] - b[0])
	})
	return out
}

// apply replays one op.
func (s *state) apply(op Op) error {
	if s.cut != nil {
		return fmt.Errorf("powerfs: op %d (%s) after the cut", op.Seq, op.Kind)
	}
	switch op.Kind {
	case OpBase:
		return s.base(op)
	case OpCreate, OpMkdir, OpLink:
		return s.add(op)
	case OpUnlink, OpRmdir:
		d, err := s.dir(op.Dir)
		if err != nil {
			return err
		}
		if d.live[op.Name] != op.Ino {
			return fmt.Errorf("powerfs: op %d: %s does not name inode %d", op.Seq, op.Name, op.Ino)
		}
		delete(d.live, op.Name)
	case OpRename, OpExchange:
		return s.rename(op)
	case OpWrite, OpTrunc:
		return s.write(op)
	case OpFsync, OpFsyncDir:
		return s.sync(op)
	case OpCut:
		s.cut = &op
	default:
		return fmt.Errorf("powerfs: op %d: unknown kind %q", op.Seq, op.Kind)
	}
	return nil
}

// base records an entry that was on the backing folder at the mount:
// durable from the start.
func (s *state) base(op Op) error {
	in := newInode(op.Type, op.Mode, op.Size)
	if op.Dir == 0 {
		s.root = op.Ino
		s.inodes[op.Ino] = in
		return nil
	}
	d, err := s.dir(op.Dir)
	if err != nil {
		return err
	}
	if old, ok := s.inodes[op.Ino]; ok {
		in = old // a second name of a hard-linked file
	}
	s.inodes[op.Ino] = in
	d.live[op.Name], d.durable[op.Name] = op.Ino, op.Ino
	return nil
}

// add applies a create, mkdir or link: a live entry, durable only after
// its directory's sync.
func (s *state) add(op Op) error {
	d, err := s.dir(op.Dir)
	if err != nil {
		return err
	}
	if op.Kind == OpLink {
		if _, err := s.file(op.Ino); err != nil {
			return err
		}
	} else {
		typ := op.Type
		if op.Kind == OpMkdir {
			typ = TypeDir
		}
		s.inodes[op.Ino] = newInode(typ, op.Mode, 0)
	}
	d.live[op.Name] = op.Ino
	return nil
}

// rename applies a rename, or an exchange of two names.
func (s *state) rename(op Op) error {
	d1, err := s.dir(op.Dir)
	if err != nil {
		return err
	}
	d2, err := s.dir(op.Dir2)
	if err != nil {
		return err
	}
	a, ok := d1.live[op.Name]
	if !ok || a != op.Ino {
		return fmt.Errorf("powerfs: op %d: %s does not name inode %d", op.Seq, op.Name, op.Ino)
	}
	b, had := d2.live[op.Name2]
	delete(d1.live, op.Name)
	if op.Kind == OpExchange {
		if !had {
			return fmt.Errorf("powerfs: op %d: exchange with missing %s", op.Seq, op.Name2)
		}
		d1.live[op.Name] = b
		s.exchanged[a], s.exchanged[b] = b, a
	}
	d2.live[op.Name2] = a
	return nil
}

// write applies a write or a truncate: the range becomes unsynced, and
// the pre-images the server saved are noted where they lie in the undo
// file.
func (s *state) write(op Op) error {
	in, err := s.file(op.Ino)
	if err != nil {
		return err
	}
	if op.Kind == OpWrite {
		in.spans = addSpan(in.spans, Span{op.Off, op.Off + op.Len})
	} else {
		in.spans = addSpan(in.spans, Span{op.Size, faultvfs.ToEnd})
	}
	at := op.UndoAt
	for _, sv := range op.Saved {
		in.saved = append(in.saved, Undo{Span: sv, At: at})
		at += sv[1] - sv[0]
	}
	return nil
}

// sync applies a file's fsync (its data durable, and under ext4's model
// its entries) or a directory's (its entries durable), counting syncs.
func (s *state) sync(op Op) error {
	s.syncs++
	if op.Sync != s.syncs {
		return fmt.Errorf("powerfs: op %d: sync %d, want %d", op.Seq, op.Sync, s.syncs)
	}
	if op.Kind == OpFsyncDir {
		d, err := s.dir(op.Ino)
		if err != nil {
			return err
		}
		d.durable = maps.Clone(d.live)
	} else {
		in, err := s.file(op.Ino)
		if err != nil {
			return err
		}
		in.size, in.spans, in.saved = op.Size, nil, nil
	}
	if s.dirModel == DirExt4 {
		seen := map[uint64]bool{}
		s.entriesDurable(op.Ino, seen)
		if other, ok := s.exchanged[op.Ino]; ok {
			s.entriesDurable(other, seen)
			delete(s.exchanged, op.Ino)
			delete(s.exchanged, other)
		}
	}
	return nil
}

// entriesDurable is ext4's rule for an fsync of ino, a file's or a
// directory's: every entry that names it becomes durable, a durable name
// it no longer has goes, and the same for the directories holding those
// entries, up to the root. (An exchange's other inode follows: sync.)
func (s *state) entriesDurable(ino uint64, seen map[uint64]bool) {
	if seen[ino] || ino == s.root {
		return
	}
	seen[ino] = true
	for _, dino := range slices.Sorted(maps.Keys(s.inodes)) {
		d := s.inodes[dino]
		if d.typ != TypeDir {
			continue
		}
		named := false
		for name, i := range d.live {
			if i == ino {
				d.durable[name], named = ino, true
			}
		}
		for name, i := range d.durable {
			if i == ino && d.live[name] != ino {
				delete(d.durable, name)
			}
		}
		if named {
			s.entriesDurable(dino, seen)
		}
	}
}

// Replay applies a whole log.
func replay(log []Op, dirModel string) (*state, error) {
	s := newState(dirModel)
	for _, op := range log {
		if err := s.apply(op); err != nil {
			return nil, err
		}
	}
	if s.root == 0 {
		return nil, fmt.Errorf("powerfs: the log has no root entry")
	}
	return s, nil
}

// Entry is one name that survives the cut.
type Entry struct {
	Path string `json:"path"`
	Ino  uint64 `json:"ino"`
	Type string `json:"type"`
	Mode uint32 `json:"mode,omitempty"`
}

// File is what the cut does to one surviving file with unsynced changes.
type File struct {
	// Path is the file's first surviving name.
	Path string `json:"path"`
	Ino  uint64 `json:"ino"`
	// Size is its durable size, Spans the ranges changed since its last
	// sync, Decisions one letter per unit of Spans (faultvfs.Units): k
	// kept, d dropped, g garbled.
	Size      int64  `json:"size"`
	Spans     []Span `json:"spans"`
	Decisions string `json:"decisions"`
	// Undo locates the pre-images of its overwritten durable bytes.
	Undo []Undo `json:"undo,omitempty"`
}

// Undo is the pre-image of the durable bytes Span, at At in the store's
// undo file.
type Undo struct {
	Span Span  `json:"span"`
	At   int64 `json:"at"`
}

// Outcome is what a cut leaves: every surviving name, and per file with
// unsynced changes which of them survive. Plan derives it from the log
// alone; Rebuild makes the backing folder match it.
type Outcome struct {
	Model    string  `json:"model"`
	DirModel string  `json:"dir_model"`
	Seed     int64   `json:"seed"`
	Unit     int     `json:"unit"`
	Syncs    int     `json:"syncs"`
	Cut      *Op     `json:"cut,omitempty"`
	Entries  []Entry `json:"entries"`
	Files    []File  `json:"files"`
	// LogSHA256 is LogSHA256 of the op log the cut was planned from: the
	// server's word on the log it wrote, so that a fold replaying a
	// recorded log that differs in any op, even one that changes no
	// survivor, derives another outcome. Absent in outcomes recorded
	// before it was.
	LogSHA256 string `json:"log_sha256,omitempty"`
}

// LogSHA256 is the SHA-256, in hex, of ops as their JSON array (none
// hashes as an empty array).
func LogSHA256(ops []Op) (string, error) {
	if ops == nil {
		ops = []Op{}
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// Params name the models of a cut.
type Params struct {
	Model    string `json:"model"`
	DirModel string `json:"dir_model"`
	Seed     int64  `json:"seed"`
	// Unit is the torn model's unit, faultvfs.UnitSector (the default) or
	// faultvfs.UnitPage.
	Unit int `json:"unit"`
}

// Differs names, as the record spells it, the first field of p that is
// not want's (model, dir_model, seed, unit), or "" when none is.
func (p Params) Differs(want Params) string {
	for _, f := range []struct {
		name      string
		got, want any
	}{{"model", p.Model, want.Model}, {"dir_model", p.DirModel, want.DirModel}, {"seed", p.Seed, want.Seed}, {"unit", p.Unit, want.Unit}} {
		if f.got != f.want {
			return f.name
		}
	}
	return ""
}

func (p Params) normalize() (Params, error) {
	if p.Model == "" {
		p.Model = ModelDrop
	}
	if p.DirModel == "" {
		p.DirModel = DirPOSIX
	}
	if p.Unit == 0 {
		p.Unit = faultvfs.UnitSector
	}
	if !slices.Contains(faultvfs.Faults, p.Model) {
		return p, fmt.Errorf("powerfs: model %q is not one of %q", p.Model, faultvfs.Faults)
	}
	if p.DirModel != DirPOSIX && p.DirModel != DirExt4 {
		return p, fmt.Errorf("powerfs: directory model %q: want %s or %s", p.DirModel, DirPOSIX, DirExt4)
	}
	if p.Unit != faultvfs.UnitSector && p.Unit != faultvfs.UnitPage {
		return p, fmt.Errorf("powerfs: unit %d: want %d or %d", p.Unit, faultvfs.UnitSector, faultvfs.UnitPage)
	}
	return p, nil
}

// Plan is the pure replay: from an op log and the models alone, what a cut
// at the log's end leaves. It reads no file, so a fold and verify can
// derive the same outcome from the record.
func Plan(log []Op, p Params) (Outcome, error) {
	p, err := p.normalize()
	if err != nil {
		return Outcome{}, err
	}
	s, err := replay(log, p.DirModel)
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Model: p.Model, DirModel: p.DirModel, Seed: p.Seed, Unit: p.Unit, Syncs: s.syncs, Cut: s.cut,
		Entries: []Entry{}, Files: []File{}}
	if o.LogSHA256, err = LogSHA256(log); err != nil {
		return Outcome{}, err
	}
	seen := map[uint64]bool{}
	var walk func(dino uint64, prefix string)
	walk = func(dino uint64, prefix string) {
		d := s.inodes[dino]
		list := d.durable
		if p.Model == ModelKeep {
			list = d.live
		}
		for _, name := range slices.Sorted(maps.Keys(list)) {
			ino := list[name]
			in := s.inodes[ino]
			path := prefix + name
			if in.typ == TypeDir && seen[ino] {
				continue // a directory a rename left durable in two places
			}
			o.Entries = append(o.Entries, Entry{Path: path, Ino: ino, Type: in.typ, Mode: in.mode})
			if in.typ == TypeDir {
				seen[ino] = true
				walk(ino, path+"/")
				continue
			}
			if seen[ino] || in.typ != TypeFile || len(in.spans) == 0 {
				seen[ino] = true
				continue
			}
			seen[ino] = true
			units := faultvfs.Units(in.spans, p.Unit)
			dec := make([]byte, len(units))
			for i, u := range units {
				switch p.Model {
				case ModelDrop:
					dec[i] = faultvfs.DecideDrop
				case ModelKeep:
					dec[i] = faultvfs.DecideKeep
				default:
					dec[i] = faultvfs.Decide(p.Seed, path, u)
				}
			}
			o.Files = append(o.Files, File{Path: path, Ino: ino, Size: in.size, Spans: slices.Clone(in.spans),
				Decisions: string(dec), Undo: slices.Clone(in.saved)})
		}
	}
	walk(s.root, "")
	return o, nil
}
