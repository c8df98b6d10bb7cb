package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/pattern"
	wp "idemlab/worker/pattern"
)

// TestPatternAckFirstLosesTheEvent: the shipped ack-first file acks
// before any work, so a crash after its ack step loses the event (no
// job, nothing processed) in the point and random classes; the same file
// with the ack step taken out (the ACK follows the last step) holds in
// both. Each run verifies.
func TestPatternAckFirstLosesTheEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		ackFirst bool
		violated map[string]bool
	}{
		{"ack first", true, map[string]bool{"points": true, "random": true}},
		{"ack after the last step", false, map[string]bool{"points": false, "random": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := patternFile(t, "ack-first", func(m map[string]any) {
				if !tt.ackFirst {
					m["handler"] = m["handler"].([]any)[1:]
					m["known_unsafe"] = []any{}
				} else {
					m["known_unsafe"] = []any{"points", "random"}
				}
			})
			r, out := runPattern(t, file, "--faults", "points,random", "--trials", "6")
			if r.code != 0 {
				t.Fatalf("exit %d, want 0:\n%s%s", r.code, r.stdout, r.stderr)
			}
			run := readPatternRun(t, patternResult(t, out))
			got := map[string]bool{}
			for fault := range tt.violated {
				c := run.condition(t, fault, "")
				got[fault] = c.Violating > 0
				if c.Violating > 0 && (c.Broken["one job"] == 0 || c.Broken[pattern.InvariantACK] != 0) {
					t.Errorf("%s broke %v; an event lost after its ACK breaks one job, and is acknowledged", fault, c.Broken)
				}
			}
			if d := cmp.Diff(tt.violated, got); d != "" {
				t.Errorf("violated by class (-want +got):\n%s", d)
			}
			// The harness redelivered after no ACK only: a delivery
			// whose worker wrote the ack line is the trial's last.
			b, err := os.ReadFile(filepath.Join(out, "raw-processes.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), wp.AckLine); has != tt.ackFirst {
				t.Errorf("raw-processes.jsonl holds the ack line: %v, want %v", has, tt.ackFirst)
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
				t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
			if !tt.ackFirst {
				return
			}
			// A crash after the ack step whose ack line is edited away
			// is one the fold's oracle says acked: verify names it.
			dir := copyFolder(t, out)
			p := filepath.Join(dir, "raw-processes.jsonl")
			ack := `"stderr":"` + wp.AckLine + `\n"`
			if !strings.Contains(string(b), ack) {
				t.Fatalf("raw-processes.jsonl has no %s to edit", ack)
			}
			os.WriteFile(p, []byte(strings.Replace(string(b), ack, `"stderr":""`, 1)), 0o644)
			if v := execIn(t, Hooks{}, "verify", dir); v.code != 1 || !strings.Contains(v.stdout+v.stderr, "stderr: delivery 1") || !strings.Contains(v.stdout+v.stderr, "acked=false") {
				t.Errorf("verify of an edited ack: exit %d, want 1 naming the ack step:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}
