package harness

import (
	"context"
	"errors"
	"fmt"
	"idemlab/experiments/errclass"
	"io"
	"os"
	"time"
)

// BarrierReadyFD is the descriptor on which a worker behind a barrier
// finds the readiness pipe: the first inherited extra file. Its arguments
// must say so (the explore racer takes "-ready-fd 3").
const BarrierReadyFD = 3

// BarrierReadyTimeout bounds the wait for every worker to be ready.
const BarrierReadyTimeout = 2 * time.Minute

// Racer is one worker started behind a barrier. KillAfterRelease, when
// positive, sends SIGKILL that long after the release; a kill timed from
// the start would mostly land while the worker waits at the barrier.
type Racer struct {
	Spec             Spec
	KillAfterRelease time.Duration
}

// RunBarrier starts every racer with the release pipe as its standard
// input and the readiness pipe as descriptor BarrierReadyFD, waits until
// each has written one byte on it, then releases all of them at once by
// closing the release pipe. It returns the processes in the racers' order.
// A racer that exits before the release, or that fails the protocol, is a
// harness failure.
func RunBarrier(ctx context.Context, r *Runner, racers []Racer) ([]*Proc, error) {
	return RunBarrierThen(ctx, r, racers, nil)
}

// RunBarrierThen is RunBarrier that calls between, when set, once every
// racer is ready and before the release: the parent acts while the racers
// stand still (explore runs a lease's successor while its holder waits).
func RunBarrierThen(ctx context.Context, r *Runner, racers []Racer, between func() error) ([]*Proc, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: create release pipe: %w", errclass.ErrHarness, err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		relR.Close()
		relW.Close()
		return nil, fmt.Errorf("%w: create readiness pipe: %w", errclass.ErrHarness, err)
	}
	defer readyR.Close()
	released := false
	release := func() {
		if !released {
			relW.Close()
			released = true
		}
	}
	defer release()
	type done struct {
		i   int
		p   *Proc
		err error
	}
	doneCh := make(chan done, len(racers))
	handles := make([]*Handle, 0, len(racers))
	var failure error
	for i, rc := range racers {
		s := rc.Spec
		s.Stdin, s.ExtraFiles = relR, []*os.File{readyW}
		h, err := r.Start(ctx, s)
		if err != nil {
			failure = err
			break
		}
		handles = append(handles, h)
		go func(i int) {
			p, err := h.Wait()
			doneCh <- done{i, p, err}
		}(i)
	}
	// Only the children hold these ends now: the readiness pipe reaches
	// EOF if every child dies, and the release pipe closes with the
	// parent's write end.
	relR.Close()
	readyW.Close()
	if failure == nil {
		// A racer seen exiting early is put back for the collection below.
		exited := func() (int, bool) {
			select {
			case d := <-doneCh:
				doneCh <- d
				return d.i, true
			default:
				return 0, false
			}
		}
		failure = awaitReady(ctx, readyR, len(racers), exited)
	}
	if failure == nil && between != nil {
		failure = between()
	}
	release()
	if failure == nil {
		for i, h := range handles {
			if d := racers[i].KillAfterRelease; d > 0 {
				h.killAfter(d)
			}
		}
	}
	procs := make([]*Proc, len(racers))
	var errs []error
	for range handles {
		d := <-doneCh
		procs[d.i] = d.p
		if d.err != nil {
			errs = append(errs, d.err)
		}
	}
	if len(errs) > 0 {
		// A worker's own error says more than "exited before the release".
		return nil, errors.Join(errs...)
	}
	if failure != nil {
		return nil, failure
	}
	return procs, nil
}

// awaitReady reads one byte per racer, and fails when a racer exits first,
// the time runs out or the context ends.
func awaitReady(ctx context.Context, readyR io.Reader, n int, exited func() (int, bool)) error {
	readyCh := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(readyR, make([]byte, n))
		readyCh <- err
	}()
	deadline := time.NewTimer(BarrierReadyTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case err := <-readyCh:
			if err != nil {
				return fmt.Errorf("%w: wait for %d racers to be ready: %w", errclass.ErrHarness, n, err)
			}
			return nil
		case <-poll.C:
			if i, ok := exited(); ok {
				return fmt.Errorf("%w: racer %d exited before the release", errclass.ErrHarness, i)
			}
		case <-deadline.C:
			return fmt.Errorf("%w: racers not ready after %s", errclass.ErrHarness, BarrierReadyTimeout)
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", errclass.ErrHarness, ctx.Err())
		}
	}
}

// killAfter arms a SIGKILL for a started child, as Spec.KillAfter does at
// the start. The timer is stopped once the child has been waited for.
func (h *Handle) killAfter(d time.Duration) {
	t := time.AfterFunc(d, h.kill)
	go func() {
		<-h.done
		t.Stop()
	}()
}
