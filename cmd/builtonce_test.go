package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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

// cleanedUp runs the tests, then removes what they built once.
type cleanedUp struct {
	m     interface{ Run() int }
	built []*builtOnce
}

func (c cleanedUp) Run() int {
	defer func() {
		for _, b := range c.built {
			b.remove()
		}
	}()
	return c.m.Run()
}
