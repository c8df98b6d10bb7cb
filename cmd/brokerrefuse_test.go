package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokerRefusesWhatItCannotRun: a class asked for by name that has no
// meaning on a broker (a pattern file's concurrent or power; explore's
// races by --rounds) is refused before any trial with exit 2 and one line
// naming it and why, and no folder is left. The same classes from the
// defaults are left out and recorded as not run (TestExploreOnBroker).
func TestBrokerRefusesWhatItCannotRun(t *testing.T) {
	in := filepath.Join(t.TempDir(), "explore.json")
	if err := os.WriteFile(in, []byte(exploreInput), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		argv []string
		want string
	}{
		{"pattern concurrent", []string{"--scenario", "pattern", "--input", goodInput, "--pattern-file", patterns + "single-transaction.json", "--faults", "points,concurrent"},
			"pattern.faults: concurrent: not on --broker nats: on a broker one durable pull consumer"},
		{"pattern power", []string{"--scenario", "pattern", "--input", goodInput, "--pattern-file", patterns + "single-transaction.json", "--faults", "power"},
			"pattern.faults: power: not on --broker nats: a power cut on the machine would cut the broker's store too"},
		{"explore rounds", []string{"--scenario", "explore", "--input", in, "--rounds", "2"},
			"--rounds 2: not on --broker nats: one durable pull consumer hands an event to one consumer at a time"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			argv := append(append([]string{"experiment"}, tt.argv...), "--broker", "nats", "--out", out)
			r := execIn(t, Hooks{}, argv...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and one line containing %q", r.code, r.stderr, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written for a refused run (%v)", out, err)
			}
		})
	}
}
