package protocol

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCrashAfterHits crashes at the k-th hit whatever its name, including
// a name passed twice, and treats an unreached k like an unreached point.
func TestCrashAfterHits(t *testing.T) {
	tests := []struct {
		name       string
		k          int
		points     []string
		wantCode   int
		wantPoints []string
		wantAt     string
	}{
		{"first hit", 1, []string{"a", "b", "c"}, ExitCrash, []string{"a"}, "a"},
		{"last hit", 3, []string{"a", "b", "c"}, ExitCrash, []string{"a", "b", "c"}, "c"},
		{"second pass of a name", 3, []string{"a", "b", "a"}, ExitCrash, []string{"a", "b", "a"}, "a"},
		{"k beyond the hits is a worker error", 4, []string{"a", "b", "c"}, ExitWorkerError, []string{"a", "b", "c"}, ""},
		{"zero is off", 0, []string{"a", "b"}, ExitACK, []string{"a", "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			call := NewCall("test.worker", nil, nil, &out, &errb, "", func(code int) { panic(exitCalled{code}) })
			call.Points.CrashAfterHits(tt.k)
			code := -1
			func() {
				defer func() {
					if v := recover(); v != nil {
						code = v.(exitCalled).code
					}
				}()
				for _, p := range tt.points {
					call.Points.Hit(p)
				}
				code = call.Finish(nil, ExitACK)
			}()
			var rep Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("stdout %q: %v", out.String(), err)
			}
			if code != tt.wantCode || rep.CrashedAt != tt.wantAt {
				t.Errorf("code %d at %q, want %d at %q", code, rep.CrashedAt, tt.wantCode, tt.wantAt)
			}
			if diff := cmp.Diff(tt.wantPoints, rep.Points); diff != "" {
				t.Errorf("points (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCrashAfterHits(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    int
		wantErr bool
	}{{"", 0, false}, {"1", 1, false}, {"12", 12, false}, {"0", 0, true}, {"-1", 0, true}, {"x", 0, true}} {
		got, err := ParseCrashAfterHits(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseCrashAfterHits(%q) = %d, %v", tt.in, got, err)
		}
	}
}
