package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"idemlab/worker/protocol"
)

// ReadyFD is the descriptor on which a worker started behind a one-shot
// barrier finds the readiness pipe: the first of Spec.ExtraFiles.
const ReadyFD = 3

// ReadyTimeout bounds the wait for every racer to be ready.
const ReadyTimeout = 2 * time.Minute

// BarrierSpec describes N workers started together behind one barrier.
type BarrierSpec struct {
	Scenario  string
	Condition string
	Worker    string
	Workers   int
	// Label names racer i; Args gives its arguments, without -ready-fd,
	// which RunBarrier adds.
	Label func(i int) string
	Args  func(i int) []string
}

// RunBarrier starts every racer, waits until each has opened the database and
// written its readiness byte, then releases all of them at once by closing
// the write end of the pipe that is their standard input. A racer that
// exits before the release, or any racer that fails, is a harness failure.
func (r *Runner) RunBarrier(ctx context.Context, rs BarrierSpec) ([]*Proc, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: create release pipe: %v", ErrHarness, err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		relR.Close()
		relW.Close()
		return nil, fmt.Errorf("%w: create readiness pipe: %v", ErrHarness, err)
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
	doneCh := make(chan done, rs.Workers)
	started := 0
	var startErr error
	for i := 0; i < rs.Workers; i++ {
		h, err := r.Start(ctx, Spec{
			Scenario: rs.Scenario, Condition: rs.Condition, Label: rs.Label(i),
			Worker: rs.Worker, Args: append(rs.Args(i), "-ready-fd", fmt.Sprint(ReadyFD)),
			Exits: []int{protocol.ExitACK}, Stdin: relR, ExtraFiles: []*os.File{readyW},
		})
		if err != nil {
			startErr = err
			break
		}
		started++
		go func(i int) {
			p, err := h.Wait()
			doneCh <- done{i, p, err}
		}(i)
	}
	// Only the children hold these ends now: the readiness pipe reaches
	// EOF if every child dies, and the release pipe closes when the parent
	// closes its write end.
	relR.Close()
	readyW.Close()

	var failure error
	if startErr != nil {
		failure = startErr
	} else {
		readyCh := make(chan error, 1)
		go func() {
			_, err := io.ReadFull(readyR, make([]byte, rs.Workers))
			readyCh <- err
		}()
		timer := time.NewTimer(ReadyTimeout)
		select {
		case err := <-readyCh:
			if err != nil {
				failure = fmt.Errorf("%w: %s: wait for %d racers to be ready: %v", ErrHarness, rs.Condition, rs.Workers, err)
			}
		case d := <-doneCh:
			// Put it back so the collection below sees every child.
			doneCh <- d
			failure = fmt.Errorf("%w: %s: racer %s exited before the release", ErrHarness, rs.Condition, rs.Label(d.i))
		case <-timer.C:
			failure = fmt.Errorf("%w: %s: racers not ready after %s", ErrHarness, rs.Condition, ReadyTimeout)
		case <-ctx.Done():
			failure = fmt.Errorf("%w: %s: %v", ErrHarness, rs.Condition, ctx.Err())
		}
		timer.Stop()
	}
	release()
	procs := make([]*Proc, rs.Workers)
	var errs []error
	for k := 0; k < started; k++ {
		d := <-doneCh
		procs[d.i] = d.p
		if d.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rs.Condition, d.err))
		}
	}
	if len(errs) > 0 {
		// A worker's own error says more than "exited before the release".
		if len(errs) > 1 {
			return nil, fmt.Errorf("%w (and %d more racers failed)", errs[0], len(errs)-1)
		}
		return nil, errs[0]
	}
	if failure != nil {
		return nil, failure
	}
	return procs, nil
}
