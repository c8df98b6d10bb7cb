package protocol

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exitCalled stands in for os.Exit in-process.
type exitCalled struct{ code int }

func runPoints(t *testing.T, crashAt string, points []string) (Report, int, bool) {
	t.Helper()
	var out, errb bytes.Buffer
	call := NewCall("test.worker", nil, nil, &out, &errb, crashAt, func(code int) { panic(exitCalled{code}) })
	code, crashed := -1, false
	func() {
		defer func() {
			if v := recover(); v != nil {
				code, crashed = v.(exitCalled).code, true
			}
		}()
		for _, p := range points {
			call.Points.Hit(p)
		}
		code = call.Finish(map[string]int{"n": 1}, ExitACK)
	}()
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout %q is not one report line: %v", out.String(), err)
	}
	if n := bytes.Count(out.Bytes(), []byte("\n")); n != 1 {
		t.Fatalf("stdout has %d lines, want 1: %q", n, out.String())
	}
	return rep, code, crashed
}

func TestPoints(t *testing.T) {
	tests := []struct {
		name        string
		crashAt     string
		wantCode    int
		wantCrashed bool
		wantPoints  []string
		wantAt      string
		wantError   bool
	}{
		{"no crash reports every point", "", ExitACK, false, []string{"a", "b", "c"}, "", false},
		{"crash stops at the chosen point", "b", ExitCrash, true, []string{"a", "b"}, "b", false},
		{"crash at the first point", "a", ExitCrash, true, []string{"a"}, "a", false},
		{"unreached point is a worker error", "zzz", ExitWorkerError, false, []string{"a", "b", "c"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, code, crashed := runPoints(t, tt.crashAt, []string{"a", "b", "c"})
			if code != tt.wantCode || crashed != tt.wantCrashed {
				t.Errorf("code %d crashed %v, want %d %v", code, crashed, tt.wantCode, tt.wantCrashed)
			}
			if diff := cmp.Diff(tt.wantPoints, rep.Points); diff != "" {
				t.Errorf("points (-want +got):\n%s", diff)
			}
			if rep.CrashedAt != tt.wantAt {
				t.Errorf("crashed_at %q, want %q", rep.CrashedAt, tt.wantAt)
			}
			if (rep.Error != "") != tt.wantError {
				t.Errorf("error %q, want error: %v", rep.Error, tt.wantError)
			}
			if tt.wantCode == ExitACK && string(rep.Result) != `{"n":1}` {
				t.Errorf("result %s, want {\"n\":1}", rep.Result)
			}
		})
	}
}
