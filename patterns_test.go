package main

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/explore"
	"idemlab/experiments/results"
)

// TestShippedPatternsAreInTheCodeHash: the working tree hash a run records
// covers every pattern file the binary embeds, though testdata is
// otherwise skipped: editing one changes the hash, editing a pattern file
// beside them that is not embedded does not. The tree is a copy of the
// module's root files and testdata/patterns, so patterns.go's own
// //go:embed line decides.
func TestShippedPatternsAreInTheCodeHash(t *testing.T) {
	var embedded []string
	if err := fs.WalkDir(shippedPatterns, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			embedded = append(embedded, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(embedded) == 0 {
		t.Fatal("the binary embeds no pattern file")
	}
	const other = "testdata/patterns/outbox.json"
	tests := map[string]bool{other: false}
	for _, p := range embedded {
		tests[p] = true
	}
	got := map[string]bool{}
	for edited := range tests {
		root := t.TempDir()
		copyTree(t, root, "go.mod", "go.sum", "main.go", "patterns.go", other)
		for _, p := range embedded {
			copyTree(t, root, p)
		}
		before := treeHash(t, root)
		f, err := os.OpenFile(filepath.Join(root, filepath.FromSlash(edited)), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got[edited] = treeHash(t, root) != before
	}
	if diff := cmp.Diff(tests, got); diff != "" {
		t.Errorf("the hash changed when a file was edited (-want +got):\n%s", diff)
	}
}

func copyTree(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func treeHash(t *testing.T, root string) string {
	t.Helper()
	h, err := results.SourceTreeHash(root)
	if err != nil {
		t.Fatal(err)
	}
	return h.SHA256
}

// TestShippedPatternsHoldExploresArticles: the binary embeds every article
// pattern file explore runs (its tests read them from the source tree).
func TestShippedPatternsHoldExploresArticles(t *testing.T) {
	for _, name := range explore.Articles {
		if _, err := fs.Stat(shippedPatterns, path.Join(explore.ArticleDir, name+".json")); err != nil {
			t.Errorf("article pattern %s is not embedded: %v", name, err)
		}
	}
}
