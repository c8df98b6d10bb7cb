package redelivery_test

import (
	"testing"
	"time"

	"idemlab/worker/redelivery"
)

// TestNotices: a hold sends a notice at every full step that leaves more
// than a step to go; counted by hand.
func TestNotices(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		hold, every time.Duration
		want        int
	}{
		{2000 * ms, 250 * ms, 7},
		{2000 * ms, 500 * ms, 3},
		{2001 * ms, 500 * ms, 4},
		{500 * ms, 500 * ms, 0},
		{2000 * ms, 0, 0},
		{0, 500 * ms, 0},
	}
	for _, tt := range tests {
		if got := redelivery.Notices(tt.hold, tt.every); got != tt.want {
			t.Errorf("Notices(%s, %s) = %d, want %d", tt.hold, tt.every, got, tt.want)
		}
	}
}
