package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// File names inside a results folder.
const (
	ResultsFile      = "results.json"
	ObservationsFile = "observations.jsonl"
	ProcessesFile    = "raw-processes.jsonl"
)

// ProcessRecord is one line of raw-processes.jsonl.
type ProcessRecord struct {
	ID         int               `json:"id"`
	Scenario   string            `json:"scenario"`
	Condition  string            `json:"condition"`
	Label      string            `json:"label"`
	Worker     string            `json:"worker"`
	Argv       []string          `json:"argv"`
	Env        map[string]string `json:"env"`
	PID        int               `json:"pid"`
	StartedAt  string            `json:"started_at"`
	EndedAt    string            `json:"ended_at"`
	DurationMS float64           `json:"duration_ms"`
	ExitCode   int               `json:"exit_code"`
	Signal     string            `json:"signal,omitempty"`
	KilledBy   string            `json:"killed_by,omitempty"`
	Stdout     string            `json:"stdout"`
	Stderr     string            `json:"stderr"`
	// ExecutableSHA256 is the hash of the file the process was started
	// from, as the harness resolved it (a built-in worker: the run's own
	// executable; a user's program: the file its argv[0] resolves to,
	// such as /usr/bin/python3, or the script itself when argv[0] names
	// one). Absent in folders before format 5.
	ExecutableSHA256 string `json:"executable_sha256,omitempty"`
	// Lingered is what of the process's group was still running when the
	// process, the group's leader, exited by itself; absent when nothing
	// was, when the harness killed the group, and in folders made before
	// it was recorded.
	Lingered *Lingered `json:"lingered,omitempty"`
}

// Lingered names the processes that outlived their group's leader: the
// group the harness made for the process (it leads it, so the group's id
// is the process's pid), and each member alive when the leader had
// exited, before the harness killed them.
type Lingered struct {
	Group     int                `json:"group"`
	Processes []LingeringProcess `json:"processes"`
}

// LingeringProcess is one process that outlived its group's leader.
type LingeringProcess struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Recorder appends observations and process records as JSON lines. It is
// safe for concurrent use, since racing workers finish in any order.
type Recorder struct {
	mu     sync.Mutex
	obs    *jsonl
	procs  *jsonl
	nextID int
	// exes caches ExecutableSHA256 by path, so each executable is hashed
	// once per run however many processes it starts.
	exes sync.Map
}

type jsonl struct {
	f *os.File
	w *bufio.Writer
}

func openJSONL(path string) (*jsonl, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	return &jsonl{f: f, w: bufio.NewWriter(f)}, nil
}

func (j *jsonl) put(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	j.w.Write(b)
	return j.w.WriteByte('\n')
}

func (j *jsonl) close() error {
	if err := j.w.Flush(); err != nil {
		j.f.Close()
		return err
	}
	if err := j.f.Sync(); err != nil {
		j.f.Close()
		return err
	}
	return j.f.Close()
}

// NewRecorder creates the two JSONL files in dir; process ids count from 1.
func NewRecorder(dir string) (*Recorder, error) {
	return NewRecorderFrom(dir, 1)
}

// NewRecorderFrom is NewRecorder with process ids counting from first, as
// a shard's do (shard.Part.FirstProcessID).
func NewRecorderFrom(dir string, first int) (*Recorder, error) {
	obs, err := openJSONL(filepath.Join(dir, ObservationsFile))
	if err != nil {
		return nil, err
	}
	procs, err := openJSONL(filepath.Join(dir, ProcessesFile))
	if err != nil {
		obs.close()
		return nil, err
	}
	return &Recorder{obs: obs, procs: procs, nextID: first - 1}, nil
}

// Observe appends one observation line.
func (r *Recorder) Observe(v any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.obs.put(v)
}

// AppendProcess appends one process record and gives it its id.
func (r *Recorder) AppendProcess(rec *ProcessRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	rec.ID = r.nextID
	return r.procs.put(rec)
}

// ExecutableSHA256 is the hex SHA-256 of the executable a process was
// started from: path as exec.Cmd resolved it, relative to dir, the
// process's working folder, when it is relative. Each path is hashed once
// per recorder. It is "" on a nil recorder, or when the file cannot be
// read (verify then reports the field absent).
func (r *Recorder) ExecutableSHA256(dir, path string) string {
	if r == nil || path == "" {
		return ""
	}
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	if v, ok := r.exes.Load(path); ok {
		return v.(string)
	}
	sum, err := HashFile(path)
	if err != nil {
		return ""
	}
	r.exes.Store(path, sum)
	return sum
}

// Close flushes and syncs both files.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err1 := r.obs.close()
	err2 := r.procs.close()
	if err1 != nil {
		return fmt.Errorf("close %s: %w", ObservationsFile, err1)
	}
	if err2 != nil {
		return fmt.Errorf("close %s: %w", ProcessesFile, err2)
	}
	return nil
}
