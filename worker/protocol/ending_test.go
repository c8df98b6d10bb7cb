package protocol

import (
	"strings"
	"testing"
)

func TestEnding(t *testing.T) {
	long := strings.Repeat("é", 150)
	tests := []struct {
		name   string
		code   int
		signal string
		stderr string
		want   string
	}{
		{"worker error", ExitWorkerError, "", "worker w: insert job: UNIQUE constraint failed: t.k\n", "exited 3 (worker error): worker w: insert job: UNIQUE constraint failed: t.k"},
		{"unknown code, no words", 5, "", "", "exited 5"},
		{"last line", 1, "", "first\n\nlast words\n\n", "exited 1: last words"},
		{"panic", 2, "", "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x.go:3 +0x1\nexit status 2\n", "panicked (exit 2): boom"},
		{"fatal error", 2, "", "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n", "panicked (exit 2): all goroutines are asleep - deadlock!"},
		{"signal", -1, "killed", "half a line", "died from signal killed: half a line"},
		{"cut on a rune", 1, "", long, "exited 1: " + strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		if got := Ending(tt.code, tt.signal, tt.stderr); got != tt.want {
			t.Errorf("%s: Ending = %q, want %q", tt.name, got, tt.want)
		}
	}
}
