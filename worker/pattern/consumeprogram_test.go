package pattern

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/natswire"
)

// TestConsumeProgramArgsRoundTrip: what Argv writes, ParseConsumeProgramArgs
// reads back, for each kind of fault; a command line that lacks what a
// consumer needs is refused.
func TestConsumeProgramArgsRoundTrip(t *testing.T) {
	base := func(f ProgramFault) ConsumeProgramArgs {
		return ConsumeProgramArgs{
			Sub:     natswire.Sub{URL: "nats://127.0.0.1:4222", Stream: "S", Consumer: "C", FetchWait: 3 * time.Second},
			EventID: "evt-1", Dir: "/handlers", TimeoutMS: 10000,
			Env: map[string]string{EnvEventID: "evt-1", EnvDelivery: "1"}, Fault: f,
			Command: []string{"python3", "handler.py", "-x"},
		}
	}
	for _, tt := range []struct {
		name string
		a    ConsumeProgramArgs
	}{
		{"no fault", base(ProgramFault{})},
		{"at a point", base(ProgramFault{Point: "after-job-commit"})},
		{"at a hit", base(ProgramFault{K: 2})},
		{"after a delay from the first point", base(ProgramFault{KillUS: 1500, FromFirst: true})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConsumeProgramArgs(tt.a.Argv())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.a, got); d != "" {
				t.Errorf("(-wrote +read):\n%s", d)
			}
		})
	}
	whole := base(ProgramFault{}).Argv()
	badEnv := append([]string{}, whole...)
	for i := range badEnv {
		if badEnv[i] == "-env" {
			badEnv[i+1] = "{"
		}
	}
	for _, argv := range [][]string{whole[:len(whole)-3], badEnv} {
		if _, err := ParseConsumeProgramArgs(argv); err == nil {
			t.Errorf("%q: read without an error", argv)
		}
	}
}

// TestMessageEnv: the broker's count and flag, as a program reads them.
func TestMessageEnv(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		want map[string]string
	}{
		{1, map[string]string{EnvMsgID: "e", EnvDeliveryCount: "1", EnvRedelivered: "0"}},
		{3, map[string]string{EnvMsgID: "e", EnvDeliveryCount: "3", EnvRedelivered: "1"}},
	} {
		if d := cmp.Diff(tt.want, MessageEnv("e", tt.n)); d != "" {
			t.Errorf("count %d (-want +got):\n%s", tt.n, d)
		}
	}
}
