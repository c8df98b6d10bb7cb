package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplayCommands(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "results")
	if err := os.Mkdir(base+"-replay-1", 0o755); err != nil {
		t.Fatal(err)
	}
	rs := []Replay{{Args: []string{"--scenario", "explore", "--seed", "1"}}, {Args: []string{"--only-trial", "3"}}}
	got := ReplayCommands("go run .", "my input.json", base, rs)
	want := []string{
		"go run . experiment --scenario explore --seed 1 --input 'my input.json' --out " + base + "-replay-2",
		"go run . experiment --only-trial 3 --input 'my input.json' --out " + base + "-replay-3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if got := ReplayCommands("./idemlab", "", base+"/", rs[:1]); got[0] != "./idemlab experiment --scenario explore --seed 1 --out "+base+"-replay-2" {
		t.Errorf("without input: %q", got[0])
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"a/b.json": "a/b.json", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'"} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
