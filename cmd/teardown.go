package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/worker/powerfs"
)

// Bounds on the teardown after Ctrl-C or SIGTERM: the run's own cleanups
// (workers' groups reaped, mounts closed, clusters stopped) have
// teardownBound; past it, every power-loss mount of this process is
// aborted, which frees whatever waits on one; and after abortGrace more,
// the harness exits 130 without the rest, saying so.
var (
	teardownBound = 30 * time.Second
	abortGrace    = 10 * time.Second
	// exitNow is os.Exit; a test replaces it.
	exitNow = os.Exit
)

// teardownDeadline watches ctx, the run's signal context: once it is done
// and the run has not returned within the bounds, it aborts the mounts and
// then exits. The function it returns says the run returned, and waits
// until the watch has ended, so nothing it writes comes after. The bounds
// and exitNow are read once, here.
func teardownDeadline(ctx context.Context, stderr io.Writer) (returned func()) {
	bound, grace, exit := teardownBound, abortGrace, exitNow
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
			return
		case <-time.After(bound):
		}
		fmt.Fprintf(stderr, "idemlab: the teardown after the signal ran past %s; aborting the power-loss mounts\n", bound)
		for _, l := range powerfs.AbortAll() {
			fmt.Fprintln(stderr, "idemlab: "+l)
		}
		select {
		case <-done:
			return
		case <-time.After(grace):
		}
		fmt.Fprintf(stderr, "idemlab: the teardown did not end %s after the abort; exiting, what it had not cleaned up may be left\n", grace)
		exit(errclass.ExitInterrupted)
	}()
	return func() { close(done); <-ended }
}
