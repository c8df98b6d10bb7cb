package cmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/results"
)

// TestProgramPowerFormat6FolderVerifies: a folder of format 6 that ran a
// handler program on SQLite with power among its faults (which gave a
// program no power condition then) still verifies, with notices that
// format 7 derives its power settings and conditions otherwise.
func TestProgramPowerFormat6FolderVerifies(t *testing.T) {
	t.Parallel()
	r := execIn(t, Hooks{}, "verify", filepath.Join("..", "testdata", "golden", "pattern-program-format6"))
	if (r.code != 0 && r.code != 5) || strings.Contains(r.stdout, "✗") {
		t.Fatalf("verify exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"settings.conditions: 2 items as recorded", "by format 7's rule"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("verify says nothing of %q:\n%s", want, r.stdout)
		}
	}
}

// TestProgramSyncFormat7FolderVerifies: a folder of format 7 whose handler
// program was swept at its sync points under drop alone (format 8 sweeps
// keep and torn too) still verifies: it is planned as it ran, with a
// notice of what format 8 changed.
func TestProgramSyncFormat7FolderVerifies(t *testing.T) {
	r := execIn(t, Hooks{}, "verify", filepath.Join("..", "testdata", "golden", "pattern-sync-format7"))
	if (r.code != 0 && r.code != 5) || strings.Contains(r.stdout, "✗") {
		t.Fatalf("verify exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("the folder is format 7, this idemlab writes format %d; format 8: ", results.FormatVersion); !strings.Contains(r.stdout, want) {
		t.Errorf("verify gives no notice of format 8 (%q):\n%s", want, r.stdout)
	}
}
