package harness

import (
	"context"
	"sync"
)

// RunJobs runs jobs n at a time, each as soon as one of the n is free,
// and stops at the first error: the jobs still running see their context
// cancelled, and no further job starts. It returns that first error, or
// the context's when the caller cancelled.
func RunJobs(ctx context.Context, n int, jobs []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan func(context.Context) error)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				// A job handed over as another failed is dropped.
				if ctx.Err() != nil {
					continue
				}
				if err := j(ctx); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case ch <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Slots bounds how many jobs run at once across every caller that shares
// it: the engine runs of one scenario (explore's built-in patterns and its
// article files) each take a slot per delivery, so together they keep at
// most N children's trials going, however many runs are under way.
type Slots struct {
	ch chan struct{}
}

// NewSlots is n slots, at least one.
func NewSlots(n int) *Slots {
	return &Slots{ch: make(chan struct{}, max(1, n))}
}

// N is how many jobs may run at once.
func (s *Slots) N() int { return cap(s.ch) }

// Do runs f in a slot once one is free; a cancelled ctx gives up the wait.
func (s *Slots) Do(ctx context.Context, f func(context.Context) error) error {
	select {
	case s.ch <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.ch }()
	return f(ctx)
}
