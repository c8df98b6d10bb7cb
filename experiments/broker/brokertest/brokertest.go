// Package brokertest builds the idemlab-nats binary once for a test
// binary, so tests that run a real broker can find it.
package brokertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/broker"
)

var buildErr error

// Main builds idemlab-nats into a temporary folder, points
// broker.EnvNATSServer at it unless it is set already, and runs the
// tests. A build that fails makes Need skip, saying why.
func Main(m interface{ Run() int }) int {
	if os.Getenv(broker.EnvNATSServer) != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "idemlab-nats-bin-")
	if err != nil {
		buildErr = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	buildErr = build(filepath.Join(dir, broker.NATSBinary))
	if buildErr == nil {
		os.Setenv(broker.EnvNATSServer, filepath.Join(dir, broker.NATSBinary))
	}
	return m.Run()
}

func build(exe string) error { return Build(exe, "./cmd/idemlab-nats") }

// Root is the module's root folder.
func Root() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("no go toolchain: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(gomod))), nil
}

// Build builds the package pkg (relative to the module's root) into exe.
func Build(exe, pkg string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", exe, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// Need skips t when the broker binary could not be built.
func Need(t testing.TB) {
	t.Helper()
	if buildErr != nil {
		t.Skipf("no idemlab-nats binary: %v", buildErr)
	}
}
