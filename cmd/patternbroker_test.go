package cmd

import (
	"os"
	"strings"
	"testing"

	"idemlab/experiments/broker"
)

// TestPatternBrokerWithoutServerBinary: --broker nats with no idemlab-nats
// to be found is a usage error (exit 2) that says how to build it, before
// any trial, and no folder is left.
func TestPatternBrokerWithoutServerBinary(t *testing.T) {
	t.Setenv(broker.EnvNATSServer, "")
	t.Setenv("PATH", t.TempDir())
	r, out := runPattern(t, patterns+"single-transaction.json", "--broker", "nats", "--faults", "points")
	if r.code != 2 || !strings.Contains(r.stderr, "make build") {
		t.Errorf("exit %d, stderr %q; want 2 saying to run make build", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written for a refused run (%v)", out, err)
	}
}
