package results

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeTree writes files (slash path → content) under root.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSourceTreeHashCoversTheBuild edits one file of a small module at a
// time and says whether the code identity changes: every file the go
// command reads to build it does (cgo sources and headers, embedded
// files, a file under an embedded folder), and nothing else does.
func TestSourceTreeHashCoversTheBuild(t *testing.T) {
	tree := map[string]string{
		"go.mod":               "module idemlab\n",
		"go.sum":               "",
		"main.go":              "package main\n",
		"README.md":            "# readme\n",
		"vfs/vfs.go":           "package vfs\n\n// #include \"api.h\"\nimport \"C\"\n",
		"vfs/vfs.c":            "int x;\n",
		"vfs/api.h":            "int y;\n",
		"vfs/notes.txt":        "not built\n",
		"vfs/asm_amd64.s":      "// asm\n",
		"rep/report.go":        "package rep\n\nimport _ \"embed\"\n\n//go:embed published.json \"more data/*.json\"\nvar b []byte\n\n//go:embed tables\nvar fs1 any\n",
		"rep/report_test.go":   "package rep\n\n//go:embed testonly.json\nvar t []byte\n",
		"rep/published.json":   "{}\n",
		"rep/more data/a.json": "[]\n",
		"rep/tables/t1.csv":    "a\n",
		"rep/tables/.hidden":   "h\n",
		"rep/testonly.json":    "{}\n",
		"rep/unused.json":      "{}\n",
		"testdata/x.go":        "package x\n",
		"nested/go.mod":        "module other\n",
		"nested/n.go":          "package n\n",
	}
	root := t.TempDir()
	writeTree(t, root, tree)
	base, err := SourceTreeHash(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file    string
		changes bool
	}{
		{"main.go", true},
		{"go.sum", true},
		{"vfs/vfs.c", true},
		{"vfs/api.h", true},
		{"vfs/asm_amd64.s", true},
		{"rep/published.json", true},
		{"rep/more data/a.json", true},
		{"rep/tables/t1.csv", true},
		{"rep/report_test.go", true},
		{"README.md", false},
		{"vfs/notes.txt", false},
		{"rep/tables/.hidden", false},
		{"rep/testonly.json", false},
		{"rep/unused.json", false},
		{"testdata/x.go", false},
		{"nested/n.go", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join(root, filepath.FromSlash(tc.file))
			if err := os.WriteFile(p, []byte(tree[tc.file]+"// edited\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, []byte(tree[tc.file]), 0o644)
			got, err := SourceTreeHash(root)
			if err != nil {
				t.Fatal(err)
			}
			if changed := got.SHA256 != base.SHA256; changed != tc.changes {
				t.Errorf("editing %s: hash changed = %v, want %v", tc.file, changed, tc.changes)
			}
		})
	}
}

// TestSourceTreeHashThisModule checks the rule against idemlab's own
// tree: its C sources and header, and the published tables it embeds,
// are part of the code identity.
func TestSourceTreeHashThisModule(t *testing.T) {
	wd, _ := os.Getwd()
	root, ok := FindModuleRoot(wd)
	if !ok {
		t.Fatal("no idemlab module above the test's folder")
	}
	files, err := sourceFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "go.sum", "worker/faultvfs/faultvfs.c", "worker/faultvfs/sqlite_api.h", "experiments/claim/published.json", "experiments/batch/published.json", "experiments/redelivery/published.json"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s is not hashed; hashed: %d files", want, len(files))
		}
	}
	if slices.Contains(files, "README.md") {
		t.Error("README.md is hashed, but the build does not read it")
	}
}
