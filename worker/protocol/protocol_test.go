package protocol

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
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

func TestCrashKind(t *testing.T) {
	tests := []struct {
		kind     string
		wantKind string
		wantErr  bool
	}{
		{"", "", false},
		{CrashKindKill, CrashKindKill, false},
		{CrashKindPower, CrashKindPower, false},
		{"powr", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			var out bytes.Buffer
			call := NewCall("test.worker", nil, nil, &out, &bytes.Buffer{}, "a", func(code int) { panic(exitCalled{code}) })
			err := call.Points.SetKind(tt.kind)
			if (err != nil) != tt.wantErr {
				t.Fatalf("SetKind(%q) error %v, want error %v", tt.kind, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			func() {
				defer func() { _ = recover() }()
				call.Points.Hit("a")
			}()
			var rep Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("report %q: %v", out.String(), err)
			}
			want := Report{Worker: "test.worker", Points: []string{"a"}, CrashedAt: "a", CrashKind: tt.wantKind}
			if diff := cmp.Diff(want, rep); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if tt.kind == "" && bytes.Contains(out.Bytes(), []byte("crash_kind")) {
				t.Errorf("a crash without a kind reports crash_kind, which changes existing records: %s", out.String())
			}
		})
	}
}

// TestReportLineIsMarshal checks the report line, put together field by
// field, against json.Marshal of the Report as the oracle (a nil Points
// marshalled as []), byte for byte: fixed cases for each field's omission
// and escaping, then seeded random reports.
func TestReportLineIsMarshal(t *testing.T) {
	reports := []Report{
		{},
		{Worker: "pattern.deliver", Points: []string{}},
		{Worker: "a<b>&c", Points: []string{"before-send:item-001", "x\u2028y", "bad \xff utf-8"}, Error: "quote \" and \\ and \n"},
		{Worker: "w", CrashedAt: "after-1-exec", CrashKind: "exit"},
		{Worker: "w", Result: json.RawMessage(`{"n":1,"s":"<&>"}`)},
		{Worker: "w", Result: json.RawMessage(`{ "spaced" : [1, 2] }`)},
	}
	rng := rand.New(rand.NewPCG(31, 1))
	pieces := []string{"", "a", "é", "<", "&", "\"", "\\", "\n", "\x00", "\xff", "\u2028", "point-1"}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 2000 {
		r := Report{Worker: text(), CrashedAt: text(), CrashKind: text(), Error: text()}
		if rng.IntN(3) > 0 {
			r.Points = []string{}
			for range rng.IntN(4) {
				r.Points = append(r.Points, text())
			}
		}
		if rng.IntN(2) == 0 {
			r.Result, _ = json.Marshal(map[string]string{text(): text()})
		}
		reports = append(reports, r)
	}
	for _, r := range reports {
		want := r
		if want.Points == nil {
			want.Points = []string{}
		}
		wantLine, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.line()
		if err != nil {
			t.Fatalf("line(%#v): %v", r, err)
		}
		if diff := cmp.Diff(string(wantLine), string(got)); diff != "" {
			t.Fatalf("line(%#v) (-json.Marshal +line):\n%s", r, diff)
		}
	}
}
