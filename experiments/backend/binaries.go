package backend

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"idemlab/experiments/errclass"
)

// Package is the Debian package that installs the server's binaries,
// named in the error when they are missing.
const Package = "postgresql"

// serverBinaries are what a throwaway cluster needs.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// libDirs is where Debian installs each major version's binaries, off
// PATH; the newest version wins. A test points it elsewhere.
var libDirs = "/usr/lib/postgresql/*/bin"

// FindBinaries returns the folder holding initdb, pg_ctl and postgres:
// the one pg_ctl on PATH resolves into, else the newest version under
// Debian's library folder. None found is a usage error that names the
// package to install.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && hasAll(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if hasAll(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob(libDirs)
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if hasAll(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: a run on PostgreSQL without --dsn starts its own server, but %s are not installed (looked on PATH and in %s): install the package %s (apt-get install %s); an experiment can use a running server with --dsn instead", errclass.ErrUsage, strings.Join(serverBinaries, ", "), libDirs, Package, Package)
}

func hasAll(dir string) bool {
	for _, b := range serverBinaries {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// majorOf reads the version out of ".../postgresql/15/bin".
func majorOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}
