package review

import "testing"

// TestVolatileCondition: only a condition whose last name segment starts
// with "timing" is left out of the rerun's process comparison.
func TestVolatileCondition(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"separate-commit/timing-kill", true},
		{"single-transaction/timing-race-8-kill", true},
		{"separate-commit/crash-after-hits", false},
		{"separate-commit/sweep", false},
		{"timing-only", true},
		{"timing-x/sweep", false},
	} {
		if got := volatileCondition(tt.name); got != tt.want {
			t.Errorf("volatileCondition(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
