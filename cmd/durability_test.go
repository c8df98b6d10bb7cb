package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"idemlab/worker/faultvfs"
)

// TestDurabilityBrokenCutExits1 runs the durability matrix's WAL+NORMAL
// single transaction with real processes and a power cut that restores
// nothing, a test-only switch the oracle knows nothing of: the command
// exits 1 and names the condition and the trials that lost nothing where
// the model says they lose their commit.
func TestDurabilityBrokenCutExits1(t *testing.T) {
	t.Parallel()
	undo := faultvfs.SetBreakForTest(faultvfs.BreakNoRestore)
	defer undo()
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, Hooks{}, "experiment", "--scenario", "durability", "--pattern", "redelivery-single",
		"--journal-mode", "WAL", "--synchronous", "NORMAL", "--kind", "power", "--input", "../input.json", "--out", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", r.code, r.stderr)
	}
	all := r.stdout + r.stderr
	for _, want := range []string{"FAIL durability/redelivery-single/WAL/NORMAL/power",
		"redelivery-single/WAL/NORMAL/power after-commit: ok, allowed [rolled-back]",
		"redelivery-single/WAL/NORMAL/power ack-open: ok, allowed [lost-acked]",
		"redelivery-single/WAL/NORMAL/power ack-reader: ok, allowed [lost-acked]"} {
		if !strings.Contains(all, want) {
			t.Errorf("the output lacks %q:\n%s", want, all)
		}
	}
}
