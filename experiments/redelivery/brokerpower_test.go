package redelivery

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/powerfs"
)

var powerFlags = map[string]string{FlagBroker: "nats", FlagBrokerPower: "true"}

// TestBrokerPowerCut cuts a real broker's power, its store on a real
// power-loss mount: the oracle (through Evaluate) judges every figure and
// the broker's word after the restart. The test names the facts each
// condition is about: under the default sync_interval the acked publish
// and the stream are lost; under always nothing acked is; under always
// with strict POSIX directories the stream is lost all the same.
func TestBrokerPowerCut(t *testing.T) {
	brokertest.Need(t)
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Section: json.RawMessage(section), Overrides: powerFlags})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	st.Conditions = BrokerPowerConditions()
	out := scenariotest.RunPlan(t, New(), &plan{s: st}, nil, nil)
	leftOver(t)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	type fact struct {
		PublishDurable, AckDurable, StreamFound bool
		Jobs                                    int
	}
	got := map[string]fact{}
	for name, obs := range passedDeliveries(t, out) {
		pf := obs[0].Broker.Power
		got[name] = fact{pf.PublishDurable, pf.AckDurable, pf.StreamFound, obs[len(obs)-1].FollowUpJobs}
	}
	want := map[string]fact{
		"separate-commit/power-cut-after-publish/sync-default":           {false, false, false, 0},
		"separate-commit/power-cut-after-ack/sync-default":               {false, false, false, 1},
		"separate-commit/power-cut-after-publish/sync-always":            {true, false, true, 1},
		"separate-commit/power-cut-after-ack/sync-always":                {true, true, true, 1},
		"separate-commit/power-cut-before-state-sync/sync-always":        {true, false, true, 1},
		"separate-commit/power-cut-after-publish/sync-always/posix-dirs": {false, false, false, 0},
		"separate-commit/power-cut-after-publish/sync-default/keep":      {true, false, true, 1},
		"separate-commit/power-cut-after-ack/sync-default/keep":          {true, true, true, 1},
		"separate-commit/power-cut-after-publish/sync-default/torn":      {false, false, false, 0},
		"separate-commit/power-cut-after-ack/sync-always/torn":           {true, true, true, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("power facts (-want +got):\n%s", diff)
	}
	t.Run("tamper", func(t *testing.T) { powerTamper(t, out) })
}

// powerTamper edits one recorded fact of a cut at a time; each edit must
// fail the evaluation, naming the field.
func powerTamper(t *testing.T, out scenariotest.Outcome) {
	// Observation 6 is separate-commit/power-cut-after-ack/sync-always's
	// delivery 1 (both durable), 8 the cut before the state's sync's; 0
	// the first condition's.
	power := func(edit func(pw map[string]any)) func(m map[string]any) {
		return func(m map[string]any) { edit(m["broker"].(map[string]any)["power"].(map[string]any)) }
	}
	dropSyncs := func(pw map[string]any) {
		var kept []any
		for _, op := range pw["log"].([]any) {
			if k := op.(map[string]any)["op"]; k != powerfs.OpFsync && k != powerfs.OpFsyncDir {
				kept = append(kept, op)
			}
		}
		pw["log"] = kept
	}
	tests := []struct {
		name  string
		index int
		edit  func(m map[string]any)
		field string
	}{
		{"a logged sync removed", 6, power(dropSyncs), "broker.power.outcome"},
		{"the ack's place in the log", 6, power(func(pw map[string]any) { pw["acked_at_op"] = float64(len(pw["log"].([]any))) }), "broker.power.acked_at_op"},
		{"the recorded outcome", 6, power(func(pw map[string]any) { pw["outcome"].(map[string]any)["entries"] = []any{} }), "broker.power.outcome.entries"},
		{"the stream said lost", 6, power(func(pw map[string]any) { pw["stream_lost"] = true; delete(pw, "after_restart") }), "broker.power.stream_found"},
		{"the ack floor after the restart", 6, power(func(pw map[string]any) {
			pw["after_restart"].(map[string]any)["ack_floor_stream_seq"] = 0.0
		}), "broker.power.ack_floor_after_restart"},
		{"the armed sync", 8, power(func(pw map[string]any) { pw["cut_before_sync"] = pw["cut_before_sync"].(float64) + 1 }), "broker.power.cut_before_sync"},
		{"the models", 0, power(func(pw map[string]any) { pw["params"].(map[string]any)["dir_model"] = powerfs.DirPOSIX }), "broker.power.params"},
		// 14 is the cut after the ack under keep, 18 the cut after the ack
		// under torn.
		{"keep said drop", 14, power(func(pw map[string]any) { pw["params"].(map[string]any)["model"] = powerfs.ModelDrop }), "broker.power.params"},
		{"the torn seed", 18, power(func(pw map[string]any) { pw["params"].(map[string]any)["seed"] = 0.0 }), "broker.power.params"},
		{"the restarted broker's sync", 0, func(m map[string]any) {
			m["broker"].(map[string]any)["restarted"].(map[string]any)["sync_interval"] = "always"
		}, "broker.restarted.sync_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireNamed(t, out, powerFlags, true, tt.index, tt.edit, tt.field) })
	}
}

// TestBrokerPowerFlag: --broker-power adds the power conditions to a
// --broker nats run; without a broker, on a user's server or on a machine
// without FUSE it is refused, saying why.
func TestBrokerPowerFlag(t *testing.T) {
	plan := func(ov map[string]string, fuse string) (Settings, error) {
		p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Section: json.RawMessage(section),
			Overrides: ov, Machine: scenario.Machine{FUSE: fuse}})
		if err != nil {
			return Settings{}, err
		}
		return p.Settings().(Settings), nil
	}
	st, err := plan(powerFlags, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(Conditions(), BrokerPowerConditions()...), st.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	const noFUSE = "FUSE is missing: no /dev/fuse"
	for _, tt := range []struct {
		ov         map[string]string
		fuse, want string
	}{
		{map[string]string{FlagBrokerPower: "true"}, "", "needs a broker"},
		{map[string]string{FlagBroker: "nats", FlagBrokerPower: "true", FlagBrokerURL: "nats://127.0.0.1:4222"}, "", "--broker-url"},
		{powerFlags, noFUSE, noFUSE},
	} {
		if _, err := plan(tt.ov, tt.fuse); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v (FUSE %q): %v, want an error containing %q", tt.ov, tt.fuse, err, tt.want)
		}
	}
}

// leftOver fails t if a power condition's mount is still mounted or a
// broker of this test binary's still runs.
func leftOver(t *testing.T) {
	t.Helper()
	ms, err := powerfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.Contains(m.Mountpoint, "idemlab-broker-power-") {
			t.Errorf("left mounted: %s", m.Mountpoint)
		}
	}
	exe := os.Getenv(broker.EnvNATSServer)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && l == exe {
			t.Errorf("a broker still runs: pid %s", e.Name())
		}
	}
}
