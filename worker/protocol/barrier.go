package protocol

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// AwaitRelease is a racer's side of the parent's barrier: it writes one
// byte on the inherited descriptor fd to say it is ready, then blocks until
// the parent closes standard input, which releases every racer at once.
func AwaitRelease(fd int, stdin io.Reader) error {
	f := os.NewFile(uintptr(fd), "ready")
	if f == nil {
		return fmt.Errorf("ready descriptor %d is not open", fd)
	}
	if _, err := f.Write([]byte{1}); err != nil {
		return fmt.Errorf("signal ready on descriptor %d: %w", fd, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close ready descriptor %d: %w", fd, err)
	}
	if stdin == nil {
		return errors.New("no standard input to wait on")
	}
	if _, err := io.Copy(io.Discard, stdin); err != nil {
		return fmt.Errorf("wait for the release: %w", err)
	}
	return nil
}

// Disarm drops a crash the worker has not reached. A handler whose stop
// ended it early takes a shorter path than discovery did, so a crash
// chosen further along is rightly never reached; the worker says so by
// disarming, and the parent sees an ACK with fewer points passed.
func (p *Points) Disarm() {
	p.crashAt, p.crashAfter = "", 0
}
