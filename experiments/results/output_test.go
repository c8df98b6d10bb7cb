package results

import (
	"errors"
	"idemlab/experiments/errclass"
	"os"
	"path/filepath"
	"testing"
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
