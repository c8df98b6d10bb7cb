package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/errclass"
)

// TestTeardownDeadline: after the signal, a run that returns within the
// bound ends as it is; one that does not is made to exit 130, saying so.
func TestTeardownDeadline(t *testing.T) {
	defer func(b, g time.Duration, e func(int)) { teardownBound, abortGrace, exitNow = b, g, e }(teardownBound, abortGrace, exitNow)
	teardownBound, abortGrace = 50*time.Millisecond, 50*time.Millisecond
	for _, c := range []struct {
		name      string
		signalled bool
		returnsIn time.Duration
		wantExit  []int
		wantSaid  string
	}{
		{"no signal", false, 300 * time.Millisecond, nil, ""},
		{"returns in time", true, 10 * time.Millisecond, nil, ""},
		{"hangs", true, 300 * time.Millisecond, []int{errclass.ExitInterrupted}, "did not end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			exits := make(chan int, 1)
			exitNow = func(code int) { exits <- code }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var said strings.Builder
			returned := teardownDeadline(ctx, &said)
			if c.signalled {
				cancel()
			}
			var got []int
			select {
			case code := <-exits:
				got = append(got, code)
			case <-time.After(c.returnsIn):
			}
			returned()
			if diff := cmp.Diff(c.wantExit, got); diff != "" {
				t.Errorf("exits (-want +got):\n%s", diff)
			}
			if c.wantSaid != "" && !strings.Contains(said.String(), c.wantSaid) {
				t.Errorf("said %q, want %q in it", said.String(), c.wantSaid)
			}
		})
	}
}
