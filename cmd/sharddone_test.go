package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"idemlab/experiments/all"
	"idemlab/experiments/explore"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// shardJobArgs is shard i/n of shardFlags' plan into out, with flags
// in place of shardFlags when given.
func shardJobArgs(part, out string, flags ...string) []string {
	if flags == nil {
		flags = shardFlags
	}
	return append([]string{"experiment", "--quiet", "--shard", part, "--out", out}, flags...)
}

// partials lists the hidden staging folders of runs given --out out.
func partials(t *testing.T, out string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".partial-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestShardJobRunAgain: a shard job run again finds its --out. When that
// holds this job's finished shard it exits 0, says so and runs nothing;
// anything else there is exit 2, naming why. Either way the folder is
// left as it was.
func TestShardJobRunAgain(t *testing.T) {
	t.Parallel()
	done := twoShards.get(t)[0]
	other := filepath.Join(t.TempDir(), "input.json")
	b, err := os.ReadFile("../input.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	rebuilt := keptBinary(t)
	fh, err := os.OpenFile(rebuilt, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("another build"))
	fh.Close()
	tampered := copyFolder(t, done)
	tamper(t, filepath.Join(tampered, results.ProcessesFile), `"exit_code":0`, `"exit_code":1`)
	file := filepath.Join(t.TempDir(), "shard-1")
	if err := os.WriteFile(file, []byte("not a folder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	if r := execIn(t, Hooks{}, append([]string{"experiment", "--quiet", "--out", whole}, shardFlags...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("unsharded: exit %d\n%s", r.code, r.stderr)
	}
	// A pattern's shard, then its pattern file edited.
	pattern := filepath.Join(t.TempDir(), "pattern.json")
	pb, err := os.ReadFile("../testdata/patterns/single-transaction.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pattern, pb, 0o644); err != nil {
		t.Fatal(err)
	}
	patternFlags := []string{"--input", "../input.json", "--scenario", "pattern", "--pattern-file", pattern, "--faults", "points"}
	patternDone := filepath.Join(t.TempDir(), "pattern-1")
	if r := execIn(t, Hooks{}, shardJobArgs("1/2", patternDone, patternFlags...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("pattern shard 1/2: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(pattern, append(pb, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		hooks Hooks
		args  []string
		code  int
		want  string
	}{
		{"the same job", Hooks{}, shardJobArgs("1/2", done), 0, "shard 1/2 already done in " + done},
		{"the same job, its flags in another order", Hooks{}, shardJobArgs("1/2", done, "--seed", "1", "--rounds", "0", "--trials", "4", "--scenario", "explore", "--input", "../input.json"), 0, "shard 1/2 already done in " + done},
		{"another shard", Hooks{}, shardJobArgs("2/2", done), 2, "it is shard 1/2"},
		{"another count", Hooks{}, shardJobArgs("1/3", done), 2, "it is shard 1/2"},
		{"another seed", Hooks{}, shardJobArgs("1/2", done, flagsWith("--seed", "12")...), 2, "--seed 12"},
		{"another input", Hooks{}, shardJobArgs("1/2", done, flagsWith("--input", other)...), 2, "its input hashes to"},
		{"another executable", Hooks{Executable: rebuilt}, shardJobArgs("1/2", done), 2, "its executable hashed to"},
		{"another pattern file", Hooks{}, shardJobArgs("1/2", patternDone, patternFlags...), 2, "the file " + pattern + " its plans read hashed to"},
		{"a tampered folder", Hooks{}, shardJobArgs("1/2", tampered), 2, "it does not verify"},
		{"a file", Hooks{}, shardJobArgs("1/2", file), 2, "it is not a folder"},
		{"a run without --shard", Hooks{}, shardJobArgs("1/2", whole), 2, "it is a run without --shard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.args[5]
			before := snapshot(t, out)
			r := execIn(t, tt.hooks, tt.args...)
			got := r.stdout
			if tt.code != 0 {
				got = r.stderr
			}
			if r.code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
			if after := snapshot(t, out); after != before {
				t.Errorf("%s changed", out)
			}
			if p := partials(t, out); len(p) > 0 {
				t.Errorf("it started a run: %v", p)
			}
		})
	}
}

// snapshot is a folder's results.json, or a file's bytes.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, results.ResultsFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestShardJobTwiceAtOnce: two processes of one shard job started
// together, as a Kubernetes Indexed Job may run two pods of one index.
// One publishes; the other, finding the published folder when it would
// publish its own, exits 0 the same way and leaves nothing behind.
func TestShardJobTwiceAtOnce(t *testing.T) {
	exe := idemlabBinary(t)
	for try := range 3 {
		out := filepath.Join(t.TempDir(), "shard-1")
		var codes [2]int
		var stdout, stderr [2]strings.Builder
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := exec.Command(exe, shardJobArgs("1/2", out)...)
				c.Stdout, c.Stderr = &stdout[i], &stderr[i]
				c.Run()
				codes[i] = c.ProcessState.ExitCode()
			}()
		}
		wg.Wait()
		said := 0
		for i := range 2 {
			if codes[i] != 0 {
				t.Errorf("try %d: exit %d, want 0\n%s%s", try, codes[i], stdout[i].String(), stderr[i].String())
			}
			if strings.Contains(stdout[i].String(), "shard 1/2 already done in "+out) {
				said++
			}
		}
		if said != 1 {
			t.Errorf("try %d: %d of 2 runs said the shard was done, want 1:\n%s\n%s", try, said, stdout[0].String(), stdout[1].String())
		}
		if p := partials(t, out); len(p) > 0 {
			t.Errorf("try %d: the loser left its copy: %v", try, p)
		}
		if r := execIn(t, Hooks{}, "verify", out); r.code != 0 && r.code != 4 {
			t.Errorf("try %d: verify: exit %d\n%s", try, r.code, r.stdout)
		}
	}
}

// TestShardJobKilledRunsAgain: a job killed while it ran left only its
// hidden staging folder; run again, it runs the shard and publishes it.
func TestShardJobKilledRunsAgain(t *testing.T) {
	exe := idemlabBinary(t)
	out := filepath.Join(t.TempDir(), "shard-1")
	c := exec.Command(exe, shardJobArgs("1/2", out)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A SIGKILLed run removes none of its scratch folders (the pattern
	// files it wrote, its trials' databases): they go in a temp folder of
	// the test's own, which the test removes, not in the machine's.
	c.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it, workers and all, once it has recorded a process.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p := partials(t, out)
		if len(p) == 1 {
			if st, err := os.Stat(filepath.Join(p[0], results.ProcessesFile)); err == nil && st.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			t.Fatal("the run recorded no process in 30 s")
		}
	}
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	c.Wait()
	if _, err := os.Lstat(out); err == nil {
		t.Fatalf("the killed run published %s", out)
	}
	r := execIn(t, Hooks{}, shardJobArgs("1/2", out)...)
	if (r.code != 0 && r.code != 1) || strings.Contains(r.stdout, "already done") {
		t.Fatalf("run again: exit %d, want a run\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, Hooks{}, "verify", out); r.code != 0 && r.code != 4 {
		t.Errorf("verify: exit %d\n%s", r.code, r.stdout)
	}
}

// strictExplore is explore with a check that fails every trial of
// separate-commit with no fault: a run of it fails its expectations,
// and verify with the same registry agrees.
type strictExplore struct{ explore.Scenario }

func (s strictExplore) Check(condition string, exp, obs json.RawMessage) (bool, []results.Difference, error) {
	ok, d, err := s.Scenario.Check(condition, exp, obs)
	if condition == "separate-commit/none" {
		return false, append(d, results.Difference{Path: "strict", Expected: "nothing", Observed: "a trial"}), err
	}
	return ok, d, err
}

// TestShardJobRunAgainFailed: a shard job whose run failed its
// expectations (exit 1, and still merged) is done too when run again,
// and exits 1 as it did, saying why.
func TestShardJobRunAgainFailed(t *testing.T) {
	t.Parallel()
	reg := slices.Clone(all.Scenarios(sourcePatterns))
	for i, s := range reg {
		if s.Name() == explore.Name {
			reg[i] = scenario.Define[explore.Settings, explore.Extra](strictExplore{explore.Scenario{Articles: sourcePatterns}})
		}
	}
	h := Hooks{Registry: reg}
	out := filepath.Join(t.TempDir(), "shard-1")
	if r := execIn(t, h, shardJobArgs("1/1", out)...); r.code != 1 {
		t.Fatalf("shard 1/1 of a strict explore: exit %d, want 1\n%s", r.code, r.stderr)
	}
	r := execIn(t, h, shardJobArgs("1/1", out)...)
	if r.code != 1 || !strings.Contains(r.stdout, "shard 1/1 already done in "+out) || !strings.Contains(r.stderr, "pass: false") {
		t.Errorf("run again: exit %d, want 1, saying the shard was done with pass: false\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
