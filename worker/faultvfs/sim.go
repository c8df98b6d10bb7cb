package faultvfs

import (
	"fmt"
	"maps"
	"slices"
)

// Sim is the durability model with file contents held in memory. It exists
// so the rules can be checked on plain sequences of file operations, apart
// from SQLite and cgo; the VFS applies the same Model and keeps the images
// on disk instead.
type Sim struct {
	m      Model
	data   map[string][]byte // inode to current content
	images map[string][]byte // image name to content
	next   int
}

// NewSim returns a simulated empty directory.
func NewSim() *Sim {
	return &Sim{m: NewModel(), data: map[string][]byte{}, images: map[string][]byte{}}
}

func (s *Sim) ino(name string) (string, error) {
	ino, ok := s.m.Live[name]
	if !ok {
		return "", fmt.Errorf("%s: no such file", name)
	}
	return ino, nil
}

// Adopt adds a file that is already durable, as Baseline does.
func (s *Sim) Adopt(name string, content []byte) {
	s.next++
	ino := fmt.Sprint(s.next)
	s.data[ino] = slices.Clone(content)
	s.images[ino] = slices.Clone(content)
	s.mustApply(Op{Kind: OpAdopt, Name: name, Ino: ino, Img: ino})
}

// Create makes a new empty file, replacing any live file of that name.
func (s *Sim) Create(name string) {
	s.next++
	ino := fmt.Sprint(s.next)
	s.data[ino] = nil
	s.mustApply(Op{Kind: OpCreate, Name: name, Ino: ino})
}

// Write writes b at off, growing the file with zeros if needed.
func (s *Sim) Write(name string, off int, b []byte) error {
	ino, err := s.ino(name)
	if err != nil {
		return err
	}
	d := s.data[ino]
	if end := off + len(b); end > len(d) {
		d = append(d, make([]byte, end-len(d))...)
	}
	copy(d[off:], b)
	s.data[ino] = d
	s.mustApply(Op{Kind: OpWrite, Ino: ino, Spans: []Span{{int64(off), int64(off + len(b))}}})
	return nil
}

// Truncate cuts or extends the file to size.
func (s *Sim) Truncate(name string, size int) error {
	ino, err := s.ino(name)
	if err != nil {
		return err
	}
	d := s.data[ino]
	if size <= len(d) {
		s.data[ino] = d[:size:size]
	} else {
		s.data[ino] = append(d, make([]byte, size-len(d))...)
	}
	s.mustApply(Op{Kind: OpWrite, Ino: ino, Spans: []Span{{int64(size), ToEnd}}})
	return nil
}

// Sync fsyncs the file; dirSync also fsyncs the directory afterwards.
func (s *Sim) Sync(name string, dirSync bool) error {
	ino, err := s.ino(name)
	if err != nil {
		return err
	}
	// Each inode keeps its image under its own name; the VFS reuses
	// storage instead, which the model does not care about.
	s.images[ino] = slices.Clone(s.data[ino])
	s.mustApply(Op{Kind: OpSync, Ino: ino, Img: ino, DirSync: dirSync})
	return nil
}

// DirSync fsyncs the directory.
func (s *Sim) DirSync() { s.mustApply(Op{Kind: OpDirSync}) }

// Delete unlinks the file; dirSync also fsyncs the directory afterwards.
func (s *Sim) Delete(name string, dirSync bool) error {
	if _, err := s.ino(name); err != nil {
		return err
	}
	s.mustApply(Op{Kind: OpDelete, Name: name, DirSync: dirSync})
	return nil
}

// Files returns what processes see now, before any cut.
func (s *Sim) Files() map[string][]byte {
	out := map[string][]byte{}
	for _, n := range slices.Sorted(maps.Keys(s.m.Live)) {
		out[n] = slices.Clone(s.data[s.m.Live[n]])
	}
	return out
}

// Cut returns the directory as it is after a power loss. The Sim is left
// as it was, so one sequence can be cut at several points.
func (s *Sim) Cut() map[string][]byte {
	out, err := s.CutWith(Options{})
	if err != nil {
		panic(err) // the drop model cannot fail on a Sim's own ops
	}
	return out
}

// CutWith is Cut under a chosen fault mode, with the decisions it took.
func (s *Sim) CutWith(o Options) (map[string][]byte, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	if o.Fault == FaultKeep {
		return s.Files(), nil
	}
	torn := map[string]TornFile{}
	if o.Fault == FaultTorn {
		for _, tf := range TornPlan(&s.m, o.Seed, o.Unit) {
			torn[tf.Name] = tf
		}
	}
	out := map[string][]byte{}
	for _, a := range s.m.Plan() {
		if a.Kind == ActRemove {
			continue
		}
		var b []byte
		if a.Image != "" {
			b = slices.Clone(s.images[a.Image])
		}
		if tf, ok := torn[a.Name]; ok {
			if b, err = Tear(b, s.data[a.Ino], tf, o.Seed, o.Unit); err != nil {
				return nil, err
			}
		}
		if b == nil {
			b = []byte{}
		}
		out[a.Name] = b
	}
	return out, nil
}

// Torn returns the torn decisions a cut with o would take now.
func (s *Sim) Torn(o Options) []TornFile {
	o, err := o.normalize()
	if err != nil {
		return nil
	}
	return TornPlan(&s.m, o.Seed, o.Unit)
}

// mustApply applies an op the Sim built itself, so an error is a bug here.
func (s *Sim) mustApply(op Op) {
	if err := s.m.Apply(op); err != nil {
		panic(err)
	}
}
