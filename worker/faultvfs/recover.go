package faultvfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Report is what Recover did, file by file, kept as evidence of the cut,
// with what it did it from: the op log it replayed and, in the torn mode,
// the seed and every decision. Derive gives the plan and the decisions again
// from Log and the options alone, so a reader of the report can check that
// the files it lists are exactly those the log calls for.
type Report struct {
	// Ops is how many recorded operations the model replayed.
	Ops   int          `json:"ops"`
	Files []FileResult `json:"files"`
	// Fault is FaultDrop, FaultTorn or FaultKeep; Seed and Unit are the
	// torn mode's.
	Fault string `json:"fault"`
	Seed  int64  `json:"seed,omitempty"`
	Unit  int    `json:"unit,omitempty"`
	// Log is the op log as replayed: names, inodes, ranges and the
	// sync, delete and directory-sync ops; image slots by name only.
	Log []Op `json:"log,omitempty"`
	// Torn lists the torn mode's decisions, file by file.
	Torn []TornFile `json:"torn,omitempty"`
}

// FileResult is what happened to one file.
type FileResult struct {
	Name string `json:"name"`
	// Action is ActRestore, ActResurrect or ActRemove.
	Action string `json:"action"`
	// Reason says which rule of the model decided it.
	Reason string `json:"reason"`
	// Before is the size before recovery, -1 if the file was absent.
	Before int64 `json:"before_bytes"`
	// After is the size after recovery, -1 if the file is gone.
	After int64 `json:"after_bytes"`
	// Changed is false when the file already held its durable content.
	Changed bool `json:"changed"`
}

// Baseline declares every file now in dir durable, names and contents, and
// starts a fresh log. The parent calls it after preparing the folder and
// before starting workers, so the model does not have to guess about files
// it first meets half-way through a run. No process may have the folder's
// files open through the VFS meanwhile.
func Baseline(dir string) error {
	forget(dir)
	state := filepath.Join(dir, StateDirName)
	fresh := state + ".new"
	if err := os.RemoveAll(fresh); err != nil {
		return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(fresh, imgDir), 0o755); err != nil {
		return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
	}
	var ops []Op
	for _, e := range entries {
		if !e.Type().IsRegular() || isShm(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
		}
		img := strconv.Itoa(len(ops))
		if err := os.WriteFile(filepath.Join(fresh, imgDir, img), b, 0o644); err != nil {
			return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
		}
		ops = append(ops, Op{Kind: OpAdopt, Name: e.Name(), Ino: newIno(), Img: img})
		if broken() == BreakDropSynced {
			if err := keepBase(fresh, e.Name(), b); err != nil {
				return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
			}
		}
	}
	if err := writeLog(filepath.Join(fresh, logName), ops); err != nil {
		return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
	}
	if err := os.RemoveAll(state); err != nil {
		return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
	}
	if err := os.Rename(fresh, state); err != nil {
		return fmt.Errorf("faultvfs: baseline %s: %w", dir, err)
	}
	return nil
}

func writeLog(path string, ops []Op) error {
	var buf bytes.Buffer
	for _, op := range ops {
		b, err := jsonLine(op)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Recover turns dir into what a power cut at this instant would have left
// under the drop model: every file the VFS touched gets its durable image,
// names that never reached the disk's directory go, names whose deletion
// was not durable come back, and every -shm file goes. The parent runs it
// after the worker stopped and before anything opens the folder again.
// Afterwards the folder is baselined, since what survived a cut is on disk
// by definition.
func Recover(dir string) (Report, error) { return RecoverWith(dir, Options{}) }

// RecoverWith is Recover under a chosen fault mode. In the torn mode a
// file restored to the inode it has now gets, unit by unit of what was
// written since its last sync, the live bytes, the durable ones or
// garbage, as TornPlan decides from the seed.
func RecoverWith(dir string, o Options) (Report, error) {
	o, err := o.normalize()
	if err != nil {
		return Report{}, err
	}
	state := filepath.Join(dir, StateDirName)
	raw, err := os.ReadFile(filepath.Join(state, logName))
	if errors.Is(err, os.ErrNotExist) {
		return Report{}, fmt.Errorf("recover %s: %w", dir, ErrNoState)
	}
	if err != nil {
		return Report{}, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	forget(dir)
	ops, err := parseLog(raw)
	if err != nil {
		return Report{}, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	d, err := Derive(ops, o)
	if err != nil {
		return Report{}, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	rep := Report{Ops: len(ops), Files: []FileResult{}, Fault: o.Fault, Log: ops, Torn: d.Torn}
	if o.Fault == FaultTorn {
		rep.Seed, rep.Unit = o.Seed, o.Unit
	}
	torn := map[string]TornFile{}
	for _, tf := range d.Torn {
		torn[tf.Name] = tf
	}
	for _, a := range d.Plan {
		tf, isTorn := torn[a.Name]
		r, err := apply(dir, state, a, tornWith(tf, isTorn, o))
		if err != nil {
			return rep, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
		}
		rep.Files = append(rep.Files, r)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return rep, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	for _, e := range entries {
		if !isShm(e.Name()) {
			continue
		}
		before := size(filepath.Join(dir, e.Name()))
		if broken() != BreakNoRestore {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return rep, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
			}
		}
		rep.Files = append(rep.Files, FileResult{Name: e.Name(), Action: ActRemove, Reason: ReasonShm, Before: before, After: -1, Changed: true})
	}
	sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Name < rep.Files[j].Name })
	if err := Baseline(dir); err != nil {
		return rep, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	return rep, nil
}

// Derived is what a cut must do, as a pure function of the op log and the
// options: the plan, file by file (the -shm files aside, which Recover
// removes whatever the log says), and the torn decisions.
type Derived struct {
	Plan []Action
	Torn []TornFile
}

// Derive replays ops and returns the plan Recover carries out and, in the
// torn mode, the decisions it takes. Recover calls it, and so can anyone
// holding a Report, to check Files and Torn against Log.
func Derive(ops []Op, o Options) (Derived, error) {
	o, err := o.normalize()
	if err != nil {
		return Derived{}, err
	}
	m := NewModel()
	for i, op := range ops {
		if err := m.Apply(op); err != nil {
			return Derived{}, fmt.Errorf("log op %d: %w", i, err)
		}
	}
	var d Derived
	if o.Fault == FaultKeep {
		// Every name and every byte as the processes left them.
		return d, nil
	}
	for _, a := range m.Plan() {
		if !isShm(a.Name) {
			d.Plan = append(d.Plan, a)
		}
	}
	if o.Fault == FaultTorn {
		d.Torn = TornPlan(&m, o.Seed, o.Unit)
	}
	return d, nil
}

// ReadLog returns the op log of dir's sidecar as it stands, for a parent
// that wants the record of a trial the VFS ran without cutting it.
func ReadLog(dir string) ([]Op, error) {
	raw, err := os.ReadFile(filepath.Join(dir, StateDirName, logName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read log of %s: %w", dir, ErrNoState)
	}
	if err != nil {
		return nil, fmt.Errorf("faultvfs: read log of %s: %w", dir, err)
	}
	return parseLog(raw)
}

// Syncs counts the syncs of a log: after a Baseline, those of the
// processes that ran since.
func Syncs(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.Kind == OpSync {
			n++
		}
	}
	return n
}

// parseLog decodes every whole line of a log.
func parseLog(raw []byte) ([]Op, error) {
	ops := []Op{}
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			break
		}
		var op Op
		if err := json.Unmarshal(raw[:i], &op); err != nil {
			return nil, fmt.Errorf("log line %q: %w", raw[:i], err)
		}
		ops = append(ops, op)
		raw = raw[i+1:]
	}
	return ops, nil
}

// Reasons Recover gives, one per rule of the model.
const (
	ReasonShm        = "the WAL index is rebuilt from the WAL, never durable"
	ReasonNotDurable = "created but no directory sync since, so the name never reached the disk"
	ReasonSynced     = "content as of its last sync"
	ReasonNeverSync  = "name durable but content never synced, so empty"
	ReasonDeleted    = "deleted without a directory sync, so it comes back; "
	ReasonTorn       = "content as of its last sync, with each unit written since kept, dropped or garbled as the seed decided"
)

// tornWith returns how apply builds a restored file's content from its
// durable image: unchanged, unless the torn mode decided units of it.
func tornWith(tf TornFile, ok bool, o Options) func(durable []byte, path string) ([]byte, error) {
	if !ok {
		return nil
	}
	return func(durable []byte, path string) ([]byte, error) {
		live, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return Tear(durable, live, tf, o.Seed, o.Unit)
	}
}

// apply carries out one planned action on the real folder. tear, when set,
// builds the content from the durable image (the torn mode).
func apply(dir, state string, a Action, tear func(durable []byte, path string) ([]byte, error)) (FileResult, error) {
	path := filepath.Join(dir, a.Name)
	r := FileResult{Name: a.Name, Action: a.Kind, Before: size(path), After: -1}
	if a.Kind == ActRemove {
		r.Reason = ReasonNotDurable
		r.Changed = r.Before >= 0
		return r, carryOut(path, nil, false, state, a)
	}
	var want []byte
	if a.Image != "" {
		var err error
		if want, err = os.ReadFile(filepath.Join(state, imgDir, a.Image)); err != nil {
			return r, err
		}
		r.Reason = ReasonSynced
	} else {
		r.Reason = ReasonNeverSync
	}
	if tear != nil {
		var err error
		if want, err = tear(want, path); err != nil {
			return r, err
		}
		r.Reason = ReasonTorn
	}
	if a.Kind == ActResurrect {
		r.Reason = ReasonDeleted + r.Reason
	}
	have, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	r.After = int64(len(want))
	r.Changed = err != nil || !bytes.Equal(have, want)
	if !r.Changed && broken() != BreakDropSynced {
		return r, nil
	}
	return r, carryOut(path, want, true, state, a)
}

// carryOut puts want under path (keep) or removes path, unless a test broke
// recovery on purpose (see SetBreakForTest).
func carryOut(path string, want []byte, keep bool, state string, a Action) error {
	switch broken() {
	case BreakNoRestore:
		return nil
	case BreakDropSynced:
		base, err := os.ReadFile(filepath.Join(state, baseDir, a.Name))
		if errors.Is(err, os.ErrNotExist) {
			keep = false
		} else if err != nil {
			return err
		}
		want = base
	}
	if !keep {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp, err := os.CreateTemp(state, "restore-")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(want)
	merr := tmp.Chmod(0o644)
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// size returns the file's size, or -1 if it does not exist.
func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}
