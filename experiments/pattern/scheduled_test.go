package pattern

import (
	"testing"

	wp "idemlab/worker/pattern"
)

// TestScheduled: the random and concurrent classes are scheduled by the
// OS, by the condition's fault and never by its name; the others replay
// from the seed. The oracle states it with each condition, so it is
// recorded.
func TestScheduled(t *testing.T) {
	tests := []struct {
		fault string
		want  bool
	}{
		{wp.FaultRandom, true},
		{wp.FaultConcurrent, true},
		{wp.FaultPoints, false},
		{wp.FaultPower, false},
		{FaultNone, false},
	}
	var st Settings
	for _, tt := range tests {
		c := Condition{Name: "random/" + tt.fault, Pattern: "p", Fault: tt.fault}
		if got := c.Scheduled(); got != tt.want {
			t.Errorf("fault %s: Scheduled() = %v, want %v", tt.fault, got, tt.want)
		}
		st.Conditions = append(st.Conditions, c)
	}
	exp, err := Scenario{}.Expect(st)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range exp {
		if e.Scheduled != tests[i].want {
			t.Errorf("%s: the oracle states scheduled %v, want %v", e.Condition, e.Scheduled, tests[i].want)
		}
	}
}
