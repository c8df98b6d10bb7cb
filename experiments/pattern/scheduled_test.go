package pattern

import "testing"

// TestScheduled: the random and concurrent classes are scheduled by the
// OS; the others replay from the seed.
func TestScheduled(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"outbox/random", true},
		{"outbox/concurrent", true},
		{"outbox/points", false},
		{"outbox/power:WAL/FULL", false},
		{"outbox/none", false},
	} {
		if got := (Scenario{}).Scheduled(tt.name); got != tt.want {
			t.Errorf("Scheduled(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
