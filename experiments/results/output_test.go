package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"idemlab/experiments/errclass"
)

func TestPrepareOutputRefuses(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	os.Mkdir(existing, 0o755)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	tests := []struct{ name, out string }{
		{"empty name", ""},
		{"existing empty folder", existing},
		{"existing file", file},
		{"parent is a file", filepath.Join(file, "out")},
		{"parent missing", filepath.Join(dir, "missing", "out")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadDir(dir)
			_, err := PrepareOutput(tt.out)
			if !errors.Is(err, errclass.ErrUsage) {
				t.Fatalf("err = %v, want a usage error", err)
			}
			after, _ := os.ReadDir(dir)
			if len(after) != len(before) {
				t.Errorf("folder changed: %d entries, then %d", len(before), len(after))
			}
		})
	}
}

func TestOutputCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	o, err := PrepareOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("final folder exists before commit")
	}
	if err := o.WriteResults(&Results{}); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, ResultsFile)); err != nil {
		t.Fatal(err)
	}
	o2, err := PrepareOutput(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	o2.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("after abort the folder holds %d entries, want only the committed one", len(entries))
	}
}

func TestSourceTreeHashChanges(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module idemlab\n"), 0o644)
	os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "testdata"), 0o755)
	os.WriteFile(filepath.Join(root, "testdata", "x.go"), []byte("ignored"), 0o644)
	h1, err := SourceTreeHash(root)
	if err != nil {
		t.Fatal(err)
	}
	if h1.Files != 2 {
		t.Errorf("hashed %d files, want 2", h1.Files)
	}
	os.WriteFile(filepath.Join(root, "a.go"), []byte("package a // changed\n"), 0o644)
	h2, _ := SourceTreeHash(root)
	if h1.SHA256 == h2.SHA256 {
		t.Error("hash did not change when a source file changed")
	}
	if r, ok := FindModuleRoot(filepath.Join(root, "testdata")); !ok || r != root {
		t.Errorf("FindModuleRoot = %q %v, want %q", r, ok, root)
	}
}

// TestCommitRace commits two outputs prepared for the same final name at
// once, many times over, and once over a final name that appeared as an
// empty folder: exactly one publishes; the other gets a usage error that
// names --out and its staging folder, and that folder, kept through
// Abort, holds its results.
func TestCommitRace(t *testing.T) {
	for round := range 20 {
		dir := t.TempDir()
		final := filepath.Join(dir, "same")
		var outs [2]*Output
		for i := range outs {
			o, err := PrepareOutput(final)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.WriteResults(&Results{StartedAt: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
			outs[i] = o
		}
		if round == 0 {
			// The final name appears, empty, before either commits:
			// a plain rename would replace it.
			if err := os.Mkdir(final, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var errs [2]error
		var wg sync.WaitGroup
		for i, o := range outs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = o.Commit() }()
		}
		wg.Wait()
		published := 0
		for i, o := range outs {
			o.Abort()
			if errs[i] == nil {
				published++
				continue
			}
			if !errors.Is(errs[i], errclass.ErrUsage) || !strings.Contains(errs[i].Error(), "--out "+final) || !strings.Contains(errs[i].Error(), "results left in "+o.Staging) {
				t.Errorf("round %d: the loser's error %v, want a usage error naming --out and %s", round, errs[i], o.Staging)
			}
			if _, err := os.Stat(filepath.Join(o.Staging, ResultsFile)); err != nil {
				t.Errorf("round %d: the folder the loser names lacks its results: %v", round, err)
			}
		}
		if want := map[bool]int{true: 0, false: 1}[round == 0]; published != want {
			t.Errorf("round %d: %d of 2 published, want %d", round, published, want)
		}
	}
}
