package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagErrorsNameTheFlag: a bad flag is named without the input file,
// which is not at fault; a bad input file is still named, even when flags
// were given.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"claim": {"workers": 8}}`), 0o644)
	tests := []struct {
		name string
		args []string
		want string
		file string
	}{
		{"zero workers", []string{"--scenario", "claim", "--workers", "0", "--input", "../input.json"}, "usage error: --workers 0: want 2 to 64", ""},
		{"flags that contradict each other", []string{"--scenario", "claim", "--mutants=false", "--mutant-repetitions", "2", "--input", "../input.json"}, "usage error: --mutant-repetitions: given with --mutants=false", ""},
		{"a bad file with a good flag", []string{"--scenario", "claim", "--workers", "4", "--input", bad}, "claim.fingerprint: must not be empty", bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"experiment", "--out", filepath.Join(dir, "out")}, tt.args...)
			r := execIn(t, Hooks{}, args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d stderr %q; want 2 and %q", r.code, r.stderr, tt.want)
			}
			if tt.file == "" && strings.Contains(r.stderr, "input.json") {
				t.Errorf("a flag error is led by the input file's name: %q", r.stderr)
			}
			if tt.file != "" && !strings.Contains(r.stderr, tt.file+": ") {
				t.Errorf("an input error does not name the file %s: %q", tt.file, r.stderr)
			}
		})
	}
	assertOnly(t, dir, "bad.json")
}

// TestFlagHelpNamesEachScenarioOnce: a scenario flag's help is led by the
// scenarios that take it, once, even when its usage already names one.
func TestFlagHelpNamesEachScenarioOnce(t *testing.T) {
	r := execIn(t, Hooks{}, "experiment", "--help")
	if strings.Contains(r.stdout, "claim: claim:") {
		t.Errorf("help names a scenario twice:\n%s", r.stdout)
	}
	for _, want := range []string{"claim: racing processes per race", "batch, durability: number of items"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, tt := range []struct {
		owners      []string
		usage, want string
	}{
		{[]string{"claim"}, "claim: racing processes", "claim: racing processes"},
		{[]string{"claim"}, "racing processes", "claim: racing processes"},
		{[]string{"batch", "durability"}, "batch: items", "batch, durability: items"},
	} {
		if got := flagUsage(tt.owners, tt.usage); got != tt.want {
			t.Errorf("flagUsage(%v, %q) = %q, want %q", tt.owners, tt.usage, got, tt.want)
		}
	}
}
