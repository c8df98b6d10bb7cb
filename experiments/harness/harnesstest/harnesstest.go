// Package harnesstest gives tests a real runner and recorder whose workers
// are the test binary itself, re-executed through worker.TestMain.
package harnesstest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
)

// Env is a runner and recorder writing into a temporary folder.
type Env struct {
	Dir      string
	Runner   *harness.Runner
	Recorder *results.Recorder
}

// New makes an Env. The package under test must call worker.TestMain from
// its TestMain, so that the re-executed test binary runs workers.
func New(tb testing.TB) *Env {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	rec, err := results.NewRecorder(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rec.Close() })
	return &Env{Dir: dir, Runner: &harness.Runner{Executable: exe, Recorder: rec}, Recorder: rec}
}

// Lines closes the recorder and returns the decoded lines of one JSONL file.
func (e *Env) Lines(tb testing.TB, name string) []map[string]any {
	tb.Helper()
	e.Recorder.Close()
	f, err := os.Open(filepath.Join(e.Dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, m)
	}
	return out
}
