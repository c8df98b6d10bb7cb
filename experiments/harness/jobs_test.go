package harness_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/experiments/harness"
)

// TestRunJobs: at most n jobs at once, every job when none fails, and the
// first error cancels the running ones and starts no more.
func TestRunJobs(t *testing.T) {
	var running, peak, ran atomic.Int32
	job := func(ctx context.Context) error {
		now := running.Add(1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		running.Add(-1)
		ran.Add(1)
		return nil
	}
	jobs := make([]func(context.Context) error, 9)
	for i := range jobs {
		jobs[i] = job
	}
	if err := harness.RunJobs(context.Background(), 3, jobs); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 9 || peak.Load() > 3 {
		t.Errorf("ran %d jobs with up to %d at once, want 9 with at most 3", ran.Load(), peak.Load())
	}

	boom := errors.New("boom")
	var started, cancelled atomic.Int32
	second := make(chan struct{})
	failing := []func(context.Context) error{
		func(context.Context) error { started.Add(1); <-second; return boom },
		func(ctx context.Context) error {
			started.Add(1)
			close(second)
			select {
			case <-ctx.Done():
				cancelled.Add(1)
			case <-time.After(5 * time.Second):
			}
			return ctx.Err()
		},
	}
	for range 5 {
		failing = append(failing, func(context.Context) error { started.Add(1); return nil })
	}
	if err := harness.RunJobs(context.Background(), 2, failing); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the first job's", err)
	}
	if cancelled.Load() != 1 || started.Load() != 2 {
		t.Errorf("%d cancelled, %d started: want the running job cancelled and no other started", cancelled.Load(), started.Load())
	}
}
