package durability

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// requirePGPower skips a test of PostgreSQL power cuts where FUSE or
// PostgreSQL is missing, saying which.
func requirePGPower(t *testing.T) {
	t.Helper()
	requireFUSE(t)
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
}

// pgPowerFlags is the PostgreSQL power slice the tests run: the single
// transaction, synchronous_commit on and off, fsync on, full_page_writes
// on, drop (8 trials, about 20 s). IDEMLAB_TEST_PG_POWER_MATRIX=1 runs
// the default matrix of the pattern instead: every synchronous_commit,
// fsync, full_page_writes and model (96 trials, a few minutes).
func pgPowerFlags() map[string]string {
	if os.Getenv("IDEMLAB_TEST_PG_POWER_MATRIX") == "1" {
		return map[string]string{FlagKind: KindPower, FlagPattern: PatternSingle}
	}
	return map[string]string{FlagKind: KindPower, FlagPattern: PatternSingle, FlagSynchronousCommits: "on,off",
		FlagFsync: "on", FlagFullPageWrites: "on", FlagPowerModels: powerfs.ModelDrop}
}

// TestPGPowerMatchesModel runs PostgreSQL power cuts with real workers on
// real clusters on real mounts, and reaches the verdict as verify does:
// every trial ends as the settings' oracle allows, nothing is left
// mounted, and a tampered record fails the fold naming its field.
func TestPGPowerMatchesModel(t *testing.T) {
	requirePGPower(t)
	flags := pgPowerFlags()
	began := time.Now()
	out := runOnServer(t, flags)
	t.Logf("%d conditions in %v", len(out.Result.Conditions), time.Since(began).Round(time.Millisecond))
	noMounts(t, "a PostgreSQL power run")
	if len(out.Findings) > 0 {
		t.Fatalf("a fresh run has findings: %v", out.Findings)
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	// Line 0 is the first condition's normal run, cut after the ACK.
	tampers := []struct {
		name, field string
		edit        func(m map[string]any)
	}{
		{"recorded fsync", "pg_power.settings.fsync", func(m map[string]any) {
			m["pg_power"].(map[string]any)["settings"].(map[string]any)["fsync"] = "off"
		}},
		{"recorded synchronous_commit", "pg_power.settings.synchronous_commit", func(m map[string]any) {
			m["pg_power"].(map[string]any)["settings"].(map[string]any)["synchronous_commit"] = "local"
		}},
		{"read back", "pg_power.rows", func(m map[string]any) {
			pg := m["pg_power"].(map[string]any)
			pg["rows"] = pg["rows"].([]any)[1:]
		}},
		{"quiet settings", "pg_power.quiet", func(m map[string]any) {
			pg := m["pg_power"].(map[string]any)
			pg["quiet"] = pg["quiet"].([]any)[1:]
		}},
		{"quiet not held", "pg_power.quiet_held", func(m map[string]any) {
			m["pg_power"].(map[string]any)["quiet_held"] = false
		}},
		{"restarted postmaster not named", "pg_power.restarted_process_id", func(m map[string]any) {
			delete(m["pg_power"].(map[string]any), "restarted_process_id")
		}},
		{"cut's model", "pg_power.cut.model", func(m map[string]any) {
			m["pg_power"].(map[string]any)["cut"].(map[string]any)["model"] = powerfs.ModelKeep
		}},
		{"cut's unit", "pg_power.cut.unit", func(m map[string]any) {
			m["pg_power"].(map[string]any)["cut"].(map[string]any)["unit"] = 4096
		}},
		{"logged op dropped", "pg_power.cut.", func(m map[string]any) {
			pg := m["pg_power"].(map[string]any)
			log := pg["log"].([]any)
			for i := len(log) - 1; i >= 0; i-- {
				if op := log[i].(map[string]any); op["op"] == powerfs.OpFsync {
					pg["log"] = append(log[:i:i], log[i+1:]...)
					return
				}
			}
		}},
	}
	for _, tt := range tampers {
		t.Run(tt.name, func(t *testing.T) {
			requireObsFinding(t, out, flags, 0, tt.field, tt.edit)
		})
	}
	t.Run("a format 7 folder names no restarted postmaster", func(t *testing.T) {
		rec := scenariotest.Edit(t, out.Records, true, 0, func(m map[string]any) {
			delete(m["pg_power"].(map[string]any), "restarted_process_id")
		})
		rec.Format = results.FormatPowerLines - 1
		for _, f := range scenario.Evaluate(New(), flags, out.Settings, rec).AllFindings() {
			if strings.Contains(f.String(), "restarted_process_id") {
				t.Errorf("a folder older than format %d is held to its restarted line: %v", results.FormatPowerLines, f)
			}
		}
	})
	requirePostmasterLines(t, out, flags)
}

// requirePostmasterLines checks that every PostgreSQL power trial of out
// names the postmaster its cut SIGKILLed, as a process line of its own,
// and that an edit of that line is found in raw-processes.jsonl, naming
// the field.
func requirePostmasterLines(t *testing.T, out scenariotest.Outcome, flags map[string]string) {
	t.Helper()
	pm, server, restarted := -1, -1, -1
	for i, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.PGPower == nil {
			continue
		}
		at := slices.IndexFunc(out.Records.Processes, func(p results.Process) bool { return p.ID == o.PGPower.ServerProcessID })
		if at < 0 {
			t.Fatalf("line %d names no postmaster process line (server_process_id %d)", i, o.PGPower.ServerProcessID)
		}
		if p := out.Records.Processes[at]; p.Worker != backend.PostmasterWorker || p.PID == 0 || p.KilledBy != "harness" {
			t.Fatalf("the postmaster's line: worker %q, pid %d, killed by %q", p.Worker, p.PID, p.KilledBy)
		}
		if pm < 0 {
			pm = at
		}
		ms := slices.IndexFunc(out.Records.Processes, func(p results.Process) bool { return p.ID == o.PGPower.MountServerProcessID })
		if ms < 0 {
			t.Fatalf("line %d names no mount server process line (mount_server_process_id %d)", i, o.PGPower.MountServerProcessID)
		}
		if p := out.Records.Processes[ms]; p.Worker != powerfs.WorkerName || p.ExitCode != 0 {
			t.Fatalf("the mount server's line: worker %q, exit %d", p.Worker, p.ExitCode)
		}
		if server < 0 {
			server = ms
		}
		rs := slices.IndexFunc(out.Records.Processes, func(p results.Process) bool { return p.ID == o.PGPower.RestartedProcessID })
		if o.PGPower.Started != (rs >= 0) {
			t.Fatalf("line %d: the server started again %v, but restarted_process_id %d names line %d", i, o.PGPower.Started, o.PGPower.RestartedProcessID, rs)
		}
		if rs >= 0 && restarted < 0 {
			restarted = rs
		}
	}
	if pm < 0 || restarted < 0 {
		t.Fatalf("no PostgreSQL power trial whose server started again (postmaster line %d, restarted line %d)", pm, restarted)
	}
	for _, tt := range []struct {
		name, field string
		edit        func(m map[string]any)
	}{
		{"postmaster's worker", "worker", func(m map[string]any) { m["worker"] = "durability.first" }},
		{"postmaster's setting", "argv", func(m map[string]any) {
			argv := m["argv"].([]any)
			for i, a := range argv {
				if a == "fsync=on" {
					argv[i] = "fsync=off"
				}
			}
		}},
		{"postmaster stopped", "signal", func(m map[string]any) { m["signal"], m["exit_code"] = "", 0 }},
		{"mount server crashed", "exit_code", func(m map[string]any) { m["exit_code"] = 2 }},
		{"mount server's mount", "argv", func(m map[string]any) {
			argv := m["argv"].([]any)
			for i, a := range argv {
				if a == "-mnt" {
					argv[i+1] = "/elsewhere"
				}
			}
		}},
		{"mount server's model", "argv", func(m map[string]any) {
			argv := m["argv"].([]any)
			for i, a := range argv {
				if a == "-model" {
					argv[i+1] = map[bool]string{true: powerfs.ModelDrop, false: powerfs.ModelKeep}[argv[i+1] == powerfs.ModelKeep]
				}
			}
		}},
		{"restarted postmaster's setting", "argv", func(m map[string]any) {
			argv := m["argv"].([]any)
			for i, a := range argv {
				if a == "fsync=on" {
					argv[i] = "fsync=off"
				}
			}
		}},
		{"restarted postmaster's folder", "argv", func(m map[string]any) {
			argv := m["argv"].([]any)
			for i, a := range argv {
				if a == "-D" {
					argv[i+1] = "/elsewhere"
				}
			}
		}},
		{"restarted postmaster killed", "signal", func(m map[string]any) { m["signal"] = "killed" }},
		{"restarted postmaster started before the cut", "started_at", func(m map[string]any) {
			m["started_at"], m["ended_at"], m["duration_ms"] = "2000-01-01T00:00:00Z", "2000-01-01T00:00:01Z", 1000.0
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at := pm
			if strings.HasPrefix(tt.name, "mount server") {
				at = server
			}
			if strings.HasPrefix(tt.name, "restarted postmaster") {
				at = restarted
			}
			rec := scenariotest.Edit(t, out.Records, false, at, tt.edit)
			findings := scenario.Evaluate(New(), flags, out.Settings, rec).AllFindings()
			if !slices.ContainsFunc(findings, func(f results.Finding) bool {
				return f.File == results.ProcessesFile && strings.Contains(f.String(), tt.field)
			}) {
				t.Errorf("no finding in %s naming %s; got %v", results.ProcessesFile, tt.field, findings)
			}
		})
	}
}

// TestPGPowerBrokenCutFails: a mount whose cut keeps everything under
// drop must fail exactly the cells where the oracle rejects what a keep
// cut leaves (a kill's outcome: the server keeps every commit), naming
// each. fsync=off gives them away: PostgreSQL then syncs nothing, so drop
// takes every commit. synchronous_commit=off could not (its commits never
// leave the WAL buffers, so keep loses them too), and is left out.
func TestPGPowerBrokenCutFails(t *testing.T) {
	requirePGPower(t)
	t.Setenv(worker.EnvBreak, breakFSKeep)
	flags := map[string]string{FlagKind: KindPower, FlagPattern: PatternSingle, FlagSynchronousCommits: "on",
		FlagFsync: "on,off", FlagFullPageWrites: "on", FlagPowerModels: powerfs.ModelDrop}
	out := runOnServer(t, flags)
	noMounts(t, "a failing PostgreSQL power run")
	if out.Result.Pass {
		t.Fatal("the broken cut passed")
	}
	compareFailingCells(t, out, func(c Condition) Condition {
		return Condition{Pattern: c.Pattern, SynchronousCommit: c.SynchronousCommit, Kind: KindKill}
	}, func(w, kept Want) bool {
		return !Allows(w.Allowed(Trial{}), kept.Outcome) || w.Torn == nil && w.RowsLost != kept.RowsLost
	})
}

// TestPGPowerOracle holds the oracle to the rules it states, cell by
// cell, against the model of the same pattern on PostgreSQL: on/on keeps
// what a kill keeps; synchronous_commit=off under drop loses what a
// server crash under off loses; torn under off allows every prefix;
// fsync=off allows anything but, under drop, what keeps a commit.
func TestPGPowerOracle(t *testing.T) {
	const items = 2
	base := Condition{Pattern: PatternSingle, Kind: KindPower, Fsync: "on", FullPageWrites: "on", Model: powerfs.ModelDrop}
	with := func(f func(c *Condition)) Condition { c := base; f(&c); return c }
	for _, tt := range []struct {
		name string
		c    Condition
		// like is the model's condition whose exact outcome the cell
		// must have; nil when the cell allows a set.
		like *Condition
	}{
		{name: "on/on drop keeps what a kill keeps", c: with(func(c *Condition) { c.SynchronousCommit = "on" }),
			like: &Condition{Pattern: PatternSingle, SynchronousCommit: "on", Kind: KindKill}},
		{name: "on/on torn keeps what a kill keeps", c: with(func(c *Condition) { c.SynchronousCommit = "on"; c.Model = powerfs.ModelTorn }),
			like: &Condition{Pattern: PatternSingle, SynchronousCommit: "on", Kind: KindKill}},
		{name: "synchronous_commit=off drop loses what a server crash loses", c: with(func(c *Condition) { c.SynchronousCommit = "off" }),
			like: &Condition{Pattern: PatternSingle, SynchronousCommit: "off", Kind: KindServer}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, pt := range append([]string{PointACK}, Points(tt.c.Pattern, items)...) {
				got, err := wantOnServer(tt.c, items, pt)
				if err != nil {
					t.Fatal(err)
				}
				want, err := wantOnServer(*tt.like, items, pt)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s (-model +oracle):\n%s", pt, d)
				}
			}
		})
	}
	t.Run("torn under off allows every kept prefix, drop's among them", func(t *testing.T) {
		c := with(func(c *Condition) { c.SynchronousCommit = "off"; c.Model = powerfs.ModelTorn })
		for _, pt := range append([]string{PointACK}, Points(c.Pattern, items)...) {
			got, err := wantOnServer(c, items, pt)
			if err != nil {
				t.Fatal(err)
			}
			for _, like := range []Condition{{Pattern: c.Pattern, SynchronousCommit: "off", Kind: KindServer}, {Pattern: c.Pattern, SynchronousCommit: "on", Kind: KindKill}} {
				w, err := wantOnServer(like, items, pt)
				if err != nil {
					t.Fatal(err)
				}
				if a := got.Allowed(Trial{}); !Allows(a, w.Outcome) {
					t.Errorf("%s: %v does not allow %s (%s)", pt, a, w.Outcome, like.Name)
				}
			}
		}
	})
	t.Run("fsync=off under drop rejects a cut that keeps the first process's commits", func(t *testing.T) {
		c := with(func(c *Condition) { c.SynchronousCommit = "on"; c.Fsync = "off" })
		kill := Condition{Pattern: c.Pattern, SynchronousCommit: "on", Kind: KindKill}
		for _, pt := range append([]string{PointACK}, Points(c.Pattern, items)...) {
			got, err := wantOnServer(c, items, pt)
			if err != nil {
				t.Fatal(err)
			}
			keep, err := wantOnServer(kill, items, pt)
			if err != nil {
				t.Fatal(err)
			}
			sh, err := ShapeOf(c.Pattern, items, pt)
			if err != nil {
				t.Fatal(err)
			}
			if made := sh.Process.Commits; Allows(got.Allowed(Trial{}), keep.Outcome) != (made == 0) {
				t.Errorf("%s: %v allows a keep cut's %s = %v, with %d commits made", pt, got.Allowed(Trial{}), keep.Outcome, !(made == 0), made)
			}
		}
	})
}

// TestPGPowerRefusedWithoutFUSE: on a machine without FUSE, as the plan
// request records it, the PostgreSQL power kind is refused in one line
// naming what is missing; the server kinds plan as ever.
func TestPGPowerRefusedWithoutFUSE(t *testing.T) {
	without := scenario.Machine{FUSE: "FUSE is missing: no /dev/fuse"}
	for _, tt := range []struct {
		kind, want string
	}{
		{KindPower, "--kind power: FUSE is missing: no /dev/fuse"},
		{KindKill + "," + KindServer, ""},
	} {
		_, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: pgSpec, Overrides: map[string]string{FlagKind: tt.kind}, Machine: without})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("--kind %s without FUSE: %q, want %q", tt.kind, got, tt.want)
		}
	}
}

// TestPGPowerFaultUnit: on PostgreSQL fault_unit sizes the torn cuts of
// the power kind and only them: given, every torn condition's cut decides
// units of it and every drop condition's the sector it never reads; not
// given, the sector, as every folder made before it; without the power
// kind or the torn model, or of another size, it is refused naming the
// field.
func TestPGPowerFaultUnit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		section string
		flags   map[string]string
		// want is the unit of the torn conditions' cuts, err the refusal.
		want int
		err  string
	}{
		{"not given", ``, map[string]string{FlagKind: KindPower}, 512, ""},
		{"a page", ``, map[string]string{FlagKind: KindPower, FlagFaultUnit: "4096"}, 4096, ""},
		{"a page in the input", `{"kinds": ["power"], "fault_unit": 4096}`, nil, 4096, ""},
		{"neither", `{"kinds": ["power"], "fault_unit": 1024}`, nil, 0, "durability.fault_unit 1024: want 512 or 4096"},
		{"without the power kind", ``, map[string]string{FlagFaultUnit: "4096"}, 0, "--fault-unit: on --backend postgres only with kind power and power model torn"},
		{"without the torn model", ``, map[string]string{FlagKind: KindPower, FlagPowerModels: powerfs.ModelDrop, FlagFaultUnit: "4096"}, 0, "--fault-unit: only with power model torn"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: pgSpec, Section: json.RawMessage(tt.section), Overrides: tt.flags})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := p.Settings().(Settings)
			units := map[string]int{}
			for _, c := range st.Conditions {
				if c.pgPower() {
					units[c.Model] = st.pgParams(c).Unit
				}
			}
			if d := cmp.Diff(map[string]int{powerfs.ModelDrop: 512, powerfs.ModelTorn: tt.want}, units); d != "" {
				t.Errorf("cut units by model (-want +got):\n%s", d)
			}
		})
	}
}
