package faultvfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Report is what Recover did, file by file, kept as evidence of the cut.
type Report struct {
	// Ops is how many recorded operations the model replayed.
	Ops   int          `json:"ops"`
	Files []FileResult `json:"files"`
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

// Recover turns dir into what a power cut at this instant would have left:
// every file the VFS touched gets its durable image, names that never
// reached the disk's directory go, names whose deletion was not durable
// come back, and every -shm file goes. The parent runs it after the worker
// stopped and before anything opens the folder again. Afterwards the folder
// is baselined, since what survived a cut is on disk by definition.
func Recover(dir string) (Report, error) {
	state := filepath.Join(dir, StateDirName)
	raw, err := os.ReadFile(filepath.Join(state, logName))
	if errors.Is(err, os.ErrNotExist) {
		return Report{}, fmt.Errorf("recover %s: %w", dir, ErrNoState)
	}
	if err != nil {
		return Report{}, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	forget(dir)
	m := NewModel()
	if err := applyLog(&m, raw); err != nil {
		return Report{}, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	rep := Report{Ops: bytes.Count(raw, []byte("\n")), Files: []FileResult{}}
	for _, a := range m.Plan() {
		if isShm(a.Name) {
			continue
		}
		r, err := apply(dir, state, a)
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
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return rep, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
		}
		rep.Files = append(rep.Files, FileResult{Name: e.Name(), Action: ActRemove, Reason: "the WAL index is rebuilt from the WAL, never durable", Before: before, After: -1, Changed: true})
	}
	sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Name < rep.Files[j].Name })
	if err := Baseline(dir); err != nil {
		return rep, fmt.Errorf("faultvfs: recover %s: %w", dir, err)
	}
	return rep, nil
}

// apply carries out one planned action on the real folder.
func apply(dir, state string, a Action) (FileResult, error) {
	path := filepath.Join(dir, a.Name)
	r := FileResult{Name: a.Name, Action: a.Kind, Before: size(path), After: -1}
	if a.Kind == ActRemove {
		r.Reason = "created but no directory sync since, so the name never reached the disk"
		r.Changed = r.Before >= 0
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return r, err
		}
		return r, nil
	}
	var want []byte
	if a.Image != "" {
		var err error
		if want, err = os.ReadFile(filepath.Join(state, imgDir, a.Image)); err != nil {
			return r, err
		}
		r.Reason = "content as of its last sync"
	} else {
		r.Reason = "name durable but content never synced, so empty"
	}
	if a.Kind == ActResurrect {
		r.Reason = "deleted without a directory sync, so it comes back; " + r.Reason
	}
	have, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	r.After = int64(len(want))
	r.Changed = err != nil || !bytes.Equal(have, want)
	if !r.Changed {
		return r, nil
	}
	tmp, err := os.CreateTemp(state, "restore-")
	if err != nil {
		return r, err
	}
	_, werr := tmp.Write(want)
	merr := tmp.Chmod(0o644)
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		os.Remove(tmp.Name())
		return r, err
	}
	return r, os.Rename(tmp.Name(), path)
}

// size returns the file's size, or -1 if it does not exist.
func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}
