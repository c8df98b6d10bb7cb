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
//
// A racer that exits before the release, never says it is ready, or
// breaks the protocol is recorded like the others and returned with no
// error: the release comes early or late, and the fold judges each racer
// from its record. The error is only the harness's own: it could not
// start, wait for or record a racer, or the context ended.
func RunBarrier(ctx context.Context, r *Runner, racers []Racer) ([]*Proc, error) {
	return RunBarrierThen(ctx, r, racers, nil)
}

// RunBarrierThen is RunBarrier that calls between, when set, before the
// release: the parent acts while the racers stand still (explore runs a
// lease's successor while its holder waits). It runs once every racer is
// ready, or has exited, or the wait timed out; an error from it stops the
// round as the harness's own.
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
	timedOut := false
	if failure == nil {
		// A racer seen exiting early is put back for the collection below.
		exited := func() bool {
			select {
			case d := <-doneCh:
				doneCh <- d
				return true
			default:
				return false
			}
		}
		timedOut, failure = awaitReady(ctx, readyR, len(racers), exited)
	}
	if failure == nil && between != nil {
		failure = between()
	}
	release()
	for i, h := range handles {
		switch d := racers[i].KillAfterRelease; {
		case failure != nil:
		case d > 0:
			h.killAfter(d)
		case timedOut:
			// A racer that never said it was ready may never end
			// either; one still running this long after the release
			// is killed, so it cannot hang the run.
			h.killAfter(BarrierReadyTimeout)
		}
	}
	procs := make([]*Proc, len(racers))
	errs := []error{failure}
	for range handles {
		d := <-doneCh
		procs[d.i] = d.p
		errs = append(errs, d.err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return procs, nil
}

// awaitReady reads one byte per racer. It returns early, with no error,
// when a racer exits first or the time runs out (timedOut): that is the
// racers' doing, and their records say what they did. It fails only when
// the context ends or the pipe cannot be read.
func awaitReady(ctx context.Context, readyR io.Reader, n int, exited func() bool) (timedOut bool, err error) {
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
			// EOF: every racer closed the pipe, so every one has exited.
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return false, fmt.Errorf("%w: wait for %d racers to be ready: %w", errclass.ErrHarness, n, err)
			}
			return false, nil
		case <-poll.C:
			if exited() {
				return false, nil
			}
		case <-deadline.C:
			return true, nil
		case <-ctx.Done():
			return false, fmt.Errorf("%w: wait for %d racers to be ready: %w", errclass.ErrHarness, n, ctx.Err())
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
