package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keptBinary copies the test binary out of the go command's temporary
// folder, so a run made with it names a binary that stays, as a built
// idemlab does.
func keptBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "idemlab")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestVerifyExeOfTemporaryBuild: a folder made by the test binary, as by
// "go run", names a binary the go command deleted. --exe can never match
// it, so verify says so and points to the working tree hash, which it
// compares here (the tests run inside the source tree), instead of
// reporting changed code.
func TestVerifyExeOfTemporaryBuild(t *testing.T) {
	t.Parallel()
	folder := freshFolder(t, Hooks{})
	// As "go build" after "go run": another binary of the same source.
	rebuilt := filepath.Join(t.TempDir(), "idemlab")
	os.WriteFile(rebuilt, []byte("another build"), 0o755)
	r := execIn(t, Hooks{}, "verify", "--exe", rebuilt, folder)
	if r.code != 0 || strings.Contains(r.stdout, "code changed") {
		t.Fatalf("exit %d, want 0 with no changed code\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"cannot be the executable that made this folder: the run's executable was",
		"a temporary binary the go command built (go run or go test)",
		"the code is identified by the working tree hash instead",
		"as the run's did at start: the same source",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("verify does not say %q:\n%s", want, r.stdout)
		}
	}
}

// TestVerifyNamesTheEditedInputField edits the folder's input.json copy;
// verify names the first field that differs from what the run used, not
// only the hash.
func TestVerifyNamesTheEditedInputField(t *testing.T) {
	t.Parallel()
	fresh := freshFolder(t, Hooks{})
	// byInput is what verify --input says of the same file beside the
	// untouched folder.
	tests := []struct {
		name, input, want, byInput string
	}{
		{"a field the settings hold", `{"redelivery":{"event_id":"agent-run-042:completed","job_key":"other"}}`,
			`✗ input.json: redelivery.job_key: is "other", but the run used "review-agent-run-042" (the copy hashes to`,
			`the folder was not made from that file; its first difference from what the run used: redelivery.job_key: is "other", but the run used "review-agent-run-042"`},
		{"a section the run did not use", `{"redelivery":{"event_id":"agent-run-042:completed","job_key":"review-agent-run-042"},"explore":{}}`,
			`✗ input.json: gives the settings the run recorded for every scenario it ran, so it differs in a section the run did not use (explore) or in spacing`, ""},
		{"a copy that no longer parses", `{"redelivery":`,
			`no longer reads as an input file: input.json: (value): malformed JSON`, ""},
		{"a section that no longer plans", `{"redelivery":{"event_id":"","job_key":"review-agent-run-042"}}`,
			`✗ input.json: redelivery: gives no valid plan with the recorded overrides:`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFolder(t, fresh)
			given := filepath.Join(t.TempDir(), "given.json")
			os.WriteFile(given, []byte(tt.input), 0o644)
			if tt.byInput != "" {
				r := execIn(t, Hooks{}, "verify", "--input", given, fresh)
				if r.code != 1 || !strings.Contains(r.stdout, tt.byInput) {
					t.Errorf("--input: exit %d, want 1 and %q:\n%s%s", r.code, tt.byInput, r.stdout, r.stderr)
				}
			}
			os.WriteFile(filepath.Join(dir, "input.json"), []byte(tt.input), 0o644)
			r := execIn(t, Hooks{}, "verify", dir)
			if r.code != 1 || !strings.Contains(r.stdout, tt.want) {
				t.Errorf("exit %d, want 1 and %q:\n%s%s", r.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
}
