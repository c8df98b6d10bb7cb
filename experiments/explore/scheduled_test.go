package explore

import "testing"

// TestScheduled: only a condition whose last name segment starts with
// "timing-" is scheduled by the OS, and left out of a rerun's process
// comparison.
func TestScheduled(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"separate-commit/timing-kill", true},
		{"single-transaction/timing-race-8-kill", true},
		{"separate-commit/crash-after-hits", false},
		{"separate-commit/sweep", false},
		{"timing-x/sweep", false},
	} {
		if got := (Scenario{}).Scheduled(tt.name); got != tt.want {
			t.Errorf("Scheduled(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
