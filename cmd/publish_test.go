package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"idemlab/experiments/results"
)

// leftIn finds the folder a run that lost --out to another names.
var leftIn = regexp.MustCompile(`results left in (\S+)`)

// checkOneWinner asserts what two runs given the same --out did: exactly
// one published (exit 0 or 1, the folder written); the other exited 2,
// either refused at the start because the folder was there already, or,
// having run, naming a folder that exists and holds its results. Neither
// exited 3.
func checkOneWinner(t *testing.T, out string, codes [2]int, stderr [2]string) {
	t.Helper()
	won := 0
	for i, code := range codes {
		switch {
		case code == 0 || code == 1:
			won++
		case code == 2:
			m := leftIn.FindStringSubmatch(stderr[i])
			if m == nil {
				if !strings.Contains(stderr[i], "already exists") {
					t.Errorf("exit 2 saying neither where its results are nor that --out exists: %s", stderr[i])
				}
				continue
			}
			if !strings.Contains(stderr[i], "--out "+out) {
				t.Errorf("the loser does not name --out %s: %s", out, stderr[i])
			}
			if _, err := os.Stat(filepath.Join(m[1], results.ResultsFile)); err != nil {
				t.Errorf("the folder the loser names lacks its results: %v", err)
			}
		default:
			t.Errorf("exit %d: %s", code, stderr[i])
		}
	}
	if won != 1 {
		t.Errorf("%d of 2 runs published %s (exits %v), want 1", won, out, codes)
	}
	if _, err := os.Stat(filepath.Join(out, results.ResultsFile)); err != nil {
		t.Errorf("the published folder: %v", err)
	}
}

// raceTwice runs two runs into one --out at once, five times, and
// checks each try with checkOneWinner; run returns a run's exit code and
// output. It returns in how many tries both ran and one lost at the rename.
func raceTwice(t *testing.T, run func(out string) (int, string)) int {
	t.Helper()
	raced := 0
	for range 5 {
		out := filepath.Join(t.TempDir(), "same")
		var codes [2]int
		var stderr [2]string
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); codes[i], stderr[i] = run(out) }()
		}
		wg.Wait()
		checkOneWinner(t, out, codes, stderr)
		if leftIn.MatchString(stderr[0] + stderr[1]) {
			raced++
		}
	}
	return raced
}

// TestSameOutTwoProcesses starts two real idemlab experiment processes
// with the same --out at once, five times.
func TestSameOutTwoProcesses(t *testing.T) {
	exe := idemlabBinary(t)
	raced := raceTwice(t, func(out string) (int, string) {
		cmd := exec.Command(exe, "experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", out)
		b, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(b)
	})
	t.Logf("in %d of 5 tries both ran and one lost at the rename", raced)
}

// TestSameOutTwoMerges runs two merges of the same shards into the same
// --out at once, five times.
func TestSameOutTwoMerges(t *testing.T) {
	t.Parallel()
	shards := twoShards.get(t)
	raced := raceTwice(t, func(out string) (int, string) {
		r := execIn(t, Hooks{}, append([]string{"merge", "--out", out}, shards...)...)
		return r.code, r.stderr
	})
	t.Logf("in %d of 5 tries both ran and one lost at the rename", raced)
}
