package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"idemlab/experiments/harness"
)

func TestSilentWhenNotATerminal(t *testing.T) {
	tests := []struct {
		name  string
		w     func(t *testing.T) any
		quiet bool
	}{
		{"buffer", func(*testing.T) any { return &bytes.Buffer{} }, false},
		{"regular file", func(t *testing.T) any {
			f, err := os.CreateTemp(t.TempDir(), "stderr")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}, false},
		{"quiet", func(*testing.T) any { return &bytes.Buffer{} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.w(t).(interface{ Write([]byte) (int, error) })
			on, done := New(w, tt.quiet, "experiment")
			if on != nil {
				t.Fatalf("progress enabled on %s; want silence", tt.name)
			}
			done()
		})
	}
}

func TestDrawCountsProcesses(t *testing.T) {
	var buf bytes.Buffer
	on, done := Draw(&buf, "experiment")
	for i := 0; i < 3; i++ {
		on(harness.ProcessRecord{Scenario: "redelivery", Condition: "separate-commit/normal"})
	}
	out := buf.String()
	done()
	if !strings.Contains(out, "redelivery/separate-commit/normal") || !strings.Contains(out, "3") {
		t.Fatalf("progress output %q lacks the scenario/condition or the count 3", out)
	}
}
