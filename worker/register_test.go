package worker

import (
	"testing"

	"idemlab/worker/protocol"
)

// TestRegister: a worker registered from above runs by its name, and a
// second registration of a name, or one without a name or function, is
// refused.
func TestRegister(t *testing.T) {
	const name = "test.registered"
	t.Cleanup(func() { delete(registry, name) })
	Register(name, func(*protocol.Call) int { return 7 })
	if got := Run(name, nil, nil, nil, nil, "", nil); got != 7 {
		t.Errorf("the registered worker exited %d, want its 7", got)
	}
	tests := []struct {
		what string
		name string
		fn   Func
	}{
		{"twice", name, func(*protocol.Call) int { return 0 }},
		{"a built-in name", Names()[0], func(*protocol.Call) int { return 0 }},
		{"no name", "", func(*protocol.Call) int { return 0 }},
		{"no function", "test.nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not refuse", tt.name)
				}
			}()
			Register(tt.name, tt.fn)
		})
	}
}
