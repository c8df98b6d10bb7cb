package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// TestProgramPowerMachineRecorded: whether a handler program gets the
// power class is the run's machine's fact, recorded in the environment
// (fuse), and verify derives the settings from that record, never from
// this machine: plain verify does not probe it at all. A record edited to
// say FUSE was missing makes the recorded --faults power a plan that
// cannot be (as the run itself would have been refused), so verify names
// the overrides and the missing FUSE; verify
// --rerun on a machine without FUSE of a folder that needs it is refused
// in one line (exit 2) before anything runs.
func TestProgramPowerMachineRecorded(t *testing.T) {
	needPython(t)
	needFUSE(t)
	ownTmp(t)
	r, out := runPattern(t, "../testdata/handlers/single-transaction.json", "--faults", "power", "--power", "DELETE/EXTRA")
	noPowerMounts(t, "a run")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	const why = "FUSE is missing: no /dev/fuse"
	defer func(f func() scenario.Machine) { suite.ProbeMachine = f }(suite.ProbeMachine)
	probed := false
	suite.ProbeMachine = func() scenario.Machine { probed = true; return scenario.Machine{FUSE: why} }

	file := filepath.Join(out, results.ResultsFile)
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(orig, &m); err != nil {
		t.Fatal(err)
	}
	if got := m["environment"].(map[string]any)["fuse"]; got != results.FUSEAvailable {
		t.Fatalf("environment.fuse %v, want %q", got, results.FUSEAvailable)
	}
	m["environment"].(map[string]any)["fuse"] = why
	edited, _ := json.Marshal(m)

	for _, tt := range []struct {
		name    string
		results []byte
		args    []string
		code    int
		// says is what the output must hold; probe whether the machine
		// may be probed.
		says  string
		probe bool
	}{
		{"as recorded", orig, nil, 0, "run verdict", false},
		{"record edited to no FUSE", edited, nil, 1, "scenarios[pattern].overrides: the input and the recorded overrides give no valid plan: usage error: input.json: pattern.faults: power: not applicable to a handler program: " + why, false},
		{"rerun without FUSE", orig, []string{"--rerun"}, 2, "and its rerun needs it, but this machine has none: " + why, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(file, tt.results, 0o644); err != nil {
				t.Fatal(err)
			}
			probed = false
			v := execIn(t, Hooks{}, append([]string{"verify", out}, tt.args...)...)
			if v.code != tt.code || !strings.Contains(v.stdout+v.stderr, tt.says) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", v.code, tt.code, tt.says, v.stdout, v.stderr)
			}
			if probed && !tt.probe {
				t.Error("verify probed this machine's FUSE; it must plan with the folder's record")
			}
			if tt.code == 2 && strings.Count(strings.TrimSpace(v.stderr), "\n") > 0 {
				t.Errorf("the refusal is not one line:\n%s", v.stderr)
			}
		})
	}
}
