package suite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"idemlab/experiments/errclass"
	"idemlab/experiments/redelivery"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
	"idemlab/worker"
)

func TestMain(m *testing.M) { worker.TestMain(m) }

// TestCancelledRunKeepsTheCause cancels a run after its first worker, as
// Ctrl-C does: the error says the run was interrupted, keeps the
// context's error in the chain, so errors.Is(err, context.Canceled)
// holds, and nothing is written.
func TestCancelledRunKeepsTheCause(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "input.json")
	if err := os.WriteFile(in, []byte(`{"redelivery": {"event_id": "e-1", "job_key": "k-1"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	processes := 0
	out := filepath.Join(dir, "results")
	res, _, err := suite.Run(ctx, suite.Options{
		Registry: scenario.Registry{redelivery.New()}, Out: out, InputPath: in,
		Executable: exe, Workdir: dir, TempDir: t.TempDir(),
		OnProcess: func(results.ProcessRecord) {
			processes++
			cancel()
		},
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errclass.ErrInterrupted) {
		t.Fatalf("err = %v, want an interruption for which errors.Is(err, context.Canceled) holds", err)
	}
	if res != nil || processes != 1 {
		t.Errorf("results %v after %d processes; want none after the first", res, processes)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left in the folder: %v; want only the input", entries)
	}
}
