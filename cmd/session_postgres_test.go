package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPostgresProgramFolderVerifies: a pattern run of a psql program on
// PostgreSQL, recorded before a session's settings were built as values,
// still verifies, every program's environment derived again from its
// recorded target; the same folder with one program's connection string
// changed does not, and says which process.
func TestPostgresProgramFolderVerifies(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("..", "testdata", "golden", "pattern-postgres-program")
	if r := execIn(t, Hooks{}, "verify", golden); (r.code != 0 && r.code != 5) || strings.Contains(r.stdout, "✗") {
		t.Fatalf("exit %d, want 0 or 5 (code changed) with no finding\n%s%s", r.code, r.stdout, r.stderr)
	}
	dir := copyFolder(t, golden)
	p := filepath.Join(dir, "raw-processes.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := `-c synchronous_commit=local'"`
	if !strings.Contains(string(b), old) {
		t.Fatalf("the folder has no %q to change", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, `-c synchronous_commit=on'"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := execIn(t, Hooks{}, "verify", dir); r.code != 1 || !strings.Contains(r.stdout, "IDEMLAB_DSN") {
		t.Errorf("a changed IDEMLAB_DSN: exit %d, want 1 naming it\n%s%s", r.code, r.stdout, r.stderr)
	}
}
