package patternfile

import (
	"slices"
	"testing"

	"idemlab/worker"
	wp "idemlab/worker/pattern"
)

// TestProgramConsumerRegistered: a binary that imports this package, as
// every one that plans a program's delivery on a broker does, knows the
// program consumer by its name, so its re-executed children can run it.
func TestProgramConsumerRegistered(t *testing.T) {
	if names := worker.Names(); !slices.Contains(names, wp.ProgramConsumerName) {
		t.Errorf("worker %q is not registered (registered: %v)", wp.ProgramConsumerName, names)
	}
}
