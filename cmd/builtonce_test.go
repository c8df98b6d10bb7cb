package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builtOnce is a program built from the tree at most once per test
// binary, in a folder of its own that TestMain removes after the tests.
type builtOnce struct {
	pkg  string // the package to build, relative to the test's folder
	name string

	once sync.Once
	dir  string
	path string
	err  error
}

// builtIdemlab is the idemlab command, built without -race as a user builds
// it (go build, make build).
var builtIdemlab = &builtOnce{pkg: "..", name: "idemlab"}

// get builds the program on first use and returns its path, or the
// build's error, the same to every caller.
func (b *builtOnce) get() (string, error) {
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "idemlab-cmdtest-build-")
		if b.err != nil {
			return
		}
		bin := filepath.Join(b.dir, b.name)
		if out, err := exec.Command("go", "build", "-o", bin, b.pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s: %w\n%s", b.pkg, err, out)
			return
		}
		b.path = bin
	})
	return b.path, b.err
}

// remove deletes the build's folder, if it was made.
func (b *builtOnce) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// madeOnce is folders made at most once per test binary, in a folder of
// their own that TestMain removes after the tests, for the tests that only
// read them (a test that edits one edits a copy, copyFolder).
type madeOnce struct {
	name string                             // names the folder
	make func(dir string) ([]string, error) // makes the folders in dir

	once sync.Once
	dir  string
	dirs []string
	err  error
}

// get makes the folders on first use and returns them, or fails t with
// the error of that making, the same to every caller.
func (m *madeOnce) get(t testing.TB) []string {
	t.Helper()
	m.once.Do(func() {
		m.dir, m.err = os.MkdirTemp("", "idemlab-cmdtest-"+m.name+"-")
		if m.err == nil {
			m.dirs, m.err = m.make(m.dir)
		}
	})
	if m.err != nil {
		t.Fatalf("%s, made once for the tests that read it: %v", m.name, m.err)
	}
	return m.dirs
}

// remove deletes the folders, if they were made.
func (m *madeOnce) remove() {
	if m.dir != "" {
		os.RemoveAll(m.dir)
	}
}

// cleanedUp runs the tests, then removes what they built or made once.
type cleanedUp struct {
	m     interface{ Run() int }
	built []interface{ remove() }
}

func (c cleanedUp) Run() int {
	defer func() {
		for _, b := range c.built {
			b.remove()
		}
	}()
	return c.m.Run()
}
