package progress

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/harness"
)

func TestStartPicksTheOutput(t *testing.T) {
	rec := harness.ProcessRecord{Scenario: "redelivery", Condition: "separate-commit/normal", Worker: "redelivery.deliver", ExitCode: 17, DurationMS: 12.34}
	tests := []struct {
		name  string
		w     func(t *testing.T) (io.Writer, func() string)
		quiet bool
		total int
		want  string
	}{
		{"quiet prints nothing", buffer, true, 0, ""},
		{"buffer gets one line per process", buffer, false, 0,
			"experiment 1 process redelivery/separate-commit/normal redelivery.deliver exit 17 12.3 ms\n" +
				"experiment 2 processes redelivery/separate-commit/normal redelivery.deliver exit 17 12.3 ms\n"},
		{"regular file gets lines with a total", file, false, 4,
			"experiment 1/4 (25%) redelivery/separate-commit/normal redelivery.deliver exit 17 12.3 ms\n" +
				"experiment 2/4 (50%) redelivery/separate-commit/normal redelivery.deliver exit 17 12.3 ms\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, read := tt.w(t)
			on, done := Start(w, tt.quiet, "experiment", tt.total)
			if tt.quiet != (on == nil) {
				t.Fatalf("callback nil = %v, want %v", on == nil, tt.quiet)
			}
			for i := 0; on != nil && i < 2; i++ {
				on(rec)
			}
			done()
			if diff := cmp.Diff(tt.want, read()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func buffer(*testing.T) (io.Writer, func() string) {
	var b bytes.Buffer
	return &b, b.String
}

func file(t *testing.T) (io.Writer, func() string) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, func() string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func TestDrawRedrawsOneLine(t *testing.T) {
	var buf bytes.Buffer
	on, done := Draw(&buf, "experiment")
	for i := 0; i < 3; i++ {
		on(harness.ProcessRecord{Scenario: "redelivery", Condition: "separate-commit/normal"})
	}
	done()
	out := buf.String()
	if strings.Contains(out, "\n") {
		t.Errorf("status line %q has a newline; want redraws in place", out)
	}
	if !strings.Contains(out, "3 processes redelivery/separate-commit/normal") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("status %q lacks the count 3 and scenario, or is not cleared at the end", out)
	}
}

func TestETA(t *testing.T) {
	tests := []struct {
		name    string
		total   int
		done    int
		elapsed time.Duration
		want    string
		ok      bool
	}{
		{"unknown total", 0, 3, 3 * time.Second, "", false},
		{"nothing done yet", 10, 0, time.Second, "", false},
		{"quarter done", 8, 2, 2 * time.Second, "6s", true},
		{"all done", 4, 4, time.Second, "", false},
		{"rounded to seconds", 3, 2, 1300 * time.Millisecond, "1s", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			now := t0
			m := newMeter(&bytes.Buffer{}, "x", tt.total, true, func() time.Time { return now })
			m.n = tt.done
			now = t0.Add(tt.elapsed)
			eta, ok := m.eta()
			got := ""
			if ok {
				got = eta.String()
			}
			if ok != tt.ok || got != tt.want {
				t.Errorf("eta = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
