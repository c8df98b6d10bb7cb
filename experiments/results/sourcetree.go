package results

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SourceMethod says how SourceTreeHash is computed, and is recorded with it.
// A folder recorded with another method (before format 5 only Go files,
// go.mod and go.sum were hashed) is not compared.
const SourceMethod = "sha256 over 'sha256sum'-style lines '<hex sha256>  <path>\\n', sorted by slash path, one per file the go command reads to build the module: go.mod and go.sum at the root; every *.go file; every cgo, assembly and object source (*.c, *.cc, *.cpp, *.cxx, *.h, *.hh, *.hpp, *.hxx, *.m, *.s, *.S, *.sx, *.f, *.F, *.for, *.f90, *.syso); every file a //go:embed directive of a non-test .go file matches; under the module root, with hidden, _-prefixed and testdata folders and nested modules skipped (an embedded file is hashed wherever it lies)"

// buildSources are the suffixes of the non-Go files the go command
// compiles or links in a package folder: what go list calls CFiles,
// CXXFiles, HFiles, MFiles, SFiles, FFiles and SysoFiles. SourceMethod
// lists them too.
var buildSources = []string{".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".m", ".s", ".S", ".sx", ".f", ".F", ".for", ".f90", ".syso"}

// SourceTreeHash hashes every file the go command reads to build the
// module under root, as SourceMethod says. It reads the tree itself, so
// verify needs no go tool.
func SourceTreeHash(root string) (SourceHash, error) {
	paths, err := sourceFiles(root)
	if err != nil {
		return SourceHash{}, err
	}
	h := sha256.New()
	for _, rel := range paths {
		sum, err := HashFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return SourceHash{}, fmt.Errorf("hash source file: %w", err)
		}
		fmt.Fprintf(h, "%s  %s\n", sum, rel)
	}
	return SourceHash{SHA256: hex.EncodeToString(h.Sum(nil)), Files: len(paths), Method: SourceMethod}, nil
}

// sourceFiles lists the files SourceTreeHash hashes, as slash paths
// relative to root, sorted.
func sourceFiles(root string) ([]string, error) {
	files := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p == root {
				return nil
			}
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch {
		case filepath.Dir(p) == root && (name == "go.mod" || name == "go.sum"):
		case strings.HasSuffix(name, ".go"):
			if !strings.HasSuffix(name, "_test.go") {
				embedded, err := embeddedFiles(p)
				if err != nil {
					return err
				}
				for _, e := range embedded {
					files[e] = true
				}
			}
		case hasBuildSuffix(name):
		default:
			return nil
		}
		files[p] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk source tree: %w", err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		if rel == ".." || strings.HasPrefix(rel, "../") {
			// The go command refuses an embed pattern that leaves the
			// package; the build fails, so there is nothing to hash.
			continue
		}
		paths = append(paths, filepath.ToSlash(rel))
	}
	sort.Strings(paths)
	return paths, nil
}

func hasBuildSuffix(name string) bool {
	for _, s := range buildSources {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// embeddedFiles lists the files the //go:embed directives of the Go file
// at p match, as the go command resolves them: each pattern relative to
// the file's folder; a folder matched names every file under it but those
// whose name begins with "." or "_", unless the pattern starts with
// "all:". A pattern that matches nothing is the build's error to report,
// not the hash's.
func embeddedFiles(p string) ([]string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	dir := filepath.Dir(p)
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "//go:embed")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		for _, pat := range embedPatterns(rest) {
			all := strings.HasPrefix(pat, "all:")
			pat = strings.TrimPrefix(pat, "all:")
			matches, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pat)))
			if err != nil {
				continue
			}
			for _, m := range matches {
				files, err := embedTree(m, all)
				if err != nil {
					return nil, err
				}
				out = append(out, files...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return out, nil
}

// embedPatterns splits a //go:embed line's patterns: separated by spaces,
// each bare or a Go string literal.
func embedPatterns(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' || s[0] == '`' {
			end := 1
			for end < len(s) && (s[end] != s[0] || (s[0] == '"' && s[end-1] == '\\')) {
				end++
			}
			if end == len(s) {
				return out
			}
			if v, err := strconv.Unquote(s[:end+1]); err == nil {
				out = append(out, v)
			}
			s = s[end+1:]
			continue
		}
		f, rest, _ := strings.Cut(s, " ")
		f, tail, _ := strings.Cut(f, "\t")
		out = append(out, f)
		s = tail + " " + rest
	}
	return out
}

// embedTree is the regular files an embed pattern's match m names.
func embedTree(m string, all bool) ([]string, error) {
	st, err := os.Lstat(m)
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() {
		return []string{m}, nil
	}
	if !st.IsDir() {
		return nil, nil
	}
	var out []string
	err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != m && !all && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
