package protocol

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSyncCut(t *testing.T) {
	tests := []struct {
		in      string
		want    SyncCut
		point   string
		wantErr bool
	}{
		{"", SyncCut{}, "", false},
		{"3:before", SyncCut{N: 3}, "sync-3-before", false},
		{"12:after", SyncCut{N: 12, After: true}, "sync-12-after", false},
		{"0:before", SyncCut{}, "", true},
		{"3", SyncCut{}, "", true},
		{"3:during", SyncCut{}, "", true},
		{"x:after", SyncCut{}, "", true},
	}
	for _, tt := range tests {
		got, err := ParseSyncCut(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseSyncCut(%q) = %+v, %v", tt.in, got, err)
			continue
		}
		if tt.want.N > 0 && (got.Point() != tt.point || got.String() != tt.in) {
			t.Errorf("ParseSyncCut(%q): point %q, string %q", tt.in, got.Point(), got.String())
		}
	}
}

// run runs body as a worker would, with exit panicking, and returns the
// report, the code and whether exit ran.
func run(t *testing.T, setup func(c *Call), body func(c *Call) int) (Report, int, bool) {
	t.Helper()
	var out bytes.Buffer
	call := NewCall("test.worker", nil, nil, &out, &bytes.Buffer{}, "", func(code int) { panic(exitCalled{code}) })
	setup(call)
	code, exited := -1, false
	func() {
		defer func() {
			if v := recover(); v != nil {
				code, exited = v.(exitCalled).code, true
			}
		}()
		code = body(call)
	}()
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	return rep, code, exited
}

// TestArmedCrash: a point armed for an outside crash is reported like a
// chosen one when it fires, runs the crash hook first, and is an error when
// it never fires.
func TestArmedCrash(t *testing.T) {
	hooked := false
	rep, code, exited := run(t, func(c *Call) {
		c.Points.Arm("sync-2-before")
		c.Points.OnStop(func() { hooked = true })
	}, func(c *Call) int {
		c.Points.Hit("a")
		c.Points.Crash()
		return c.Finish(nil, ExitACK)
	})
	if code != ExitCrash || !exited || !hooked || rep.CrashedAt != "sync-2-before" {
		t.Errorf("code %d exited %v hooked %v at %q", code, exited, hooked, rep.CrashedAt)
	}
	if diff := cmp.Diff([]string{"a", "sync-2-before"}, rep.Points); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	rep, code, _ = run(t, func(c *Call) { c.Points.Arm("sync-9-after") }, func(c *Call) int { return c.Finish(nil, ExitACK) })
	if code != ExitWorkerError || rep.Error == "" {
		t.Errorf("an armed point never fired: code %d, error %q", code, rep.Error)
	}
}

// TestAckOpen: with the switch on, AckOpen reports success and exits at
// once, so what follows it (the close) never runs; with it off it returns.
func TestAckOpen(t *testing.T) {
	for _, on := range []bool{true, false} {
		closed, hooked := false, false
		rep, code, exited := run(t, func(c *Call) {
			c.SetAckOpen(on)
			c.Points.OnStop(func() { hooked = true })
		}, func(c *Call) int {
			c.AckOpen(map[string]int{"n": 1})
			closed = true
			return c.Finish(map[string]int{"n": 1}, ExitACK)
		})
		if code != ExitACK || exited != on || closed == on || hooked != on || string(rep.Result) != `{"n":1}` {
			t.Errorf("ack-open %v: code %d exited %v closed %v hooked %v result %s", on, code, exited, closed, hooked, rep.Result)
		}
	}
}
