package durability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// breakFSKeep names the broken powerfs server whose cut keeps everything.
const breakFSKeep = "powerfs-cut-keeps-all"

// requireFUSE skips a test of the fs layer where FUSE is missing, with the
// reason.
func requireFUSE(t *testing.T) {
	t.Helper()
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
}

// noMounts fails the test if /proc/self/mountinfo still lists a powerfs
// mount under the test's temporary folders (another run on the machine
// may have its own elsewhere).
func noMounts(t *testing.T, after string) {
	t.Helper()
	root := filepath.Dir(t.TempDir())
	ms, err := powerfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Mountpoint, root+"/") {
			t.Errorf("after %s, /proc/self/mountinfo still lists the powerfs mount %s (server %d)", after, m.Mountpoint, m.Server)
		}
	}
}

// fsMatrix is the fs layer's test matrix: every pattern under DELETE and
// WAL with NORMAL and EXTRA, power cuts only, at the named points and
// after the ACK (ack, ack-open and, with the parent's reader, ack-reader).
// IDEMLAB_TEST_FS_MATRIX=1 runs the power cuts of durability's whole
// default matrix on the fs layer instead (every pattern, journal mode and
// synchronous level: 192 trials, about half a minute on an idle machine).
var fsMatrix = fsMatrixOr(map[string]string{FlagJournalMode: "DELETE,WAL", FlagSynchronous: "NORMAL,EXTRA", FlagKind: KindPower, FlagPowerLayer: engine.LayerFS})

// fsMatrixOr is flags, or under IDEMLAB_TEST_FS_MATRIX=1 the default
// matrix's power cuts on the fs layer.
func fsMatrixOr(flags map[string]string) map[string]string {
	if os.Getenv("IDEMLAB_TEST_FS_MATRIX") == "1" {
		return map[string]string{FlagKind: KindPower, FlagPowerLayer: engine.LayerFS}
	}
	return flags
}

// TestFSLayerMatchesModel is the cross-check: the workers' power cuts made
// by the filesystem end, on every cell, as the exact model predicts, as
// the VFS's do; every trial records its op log and the fold derives each
// cut again from it; nothing is left mounted.
func TestFSLayerMatchesModel(t *testing.T) {
	requireFUSE(t)
	out := scenariotest.Run(t, New(), "", fsMatrix)
	noMounts(t, "a pass")
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("findings %v, pass %v, differences %v", out.Findings, out.Result.Pass, differences(out.Result))
	}
	fs := 0
	for _, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.FS == nil || o.Recovery != nil || len(o.FS.Log) == 0 {
			t.Errorf("%s %s: fs record %v, VFS recovery %v: a power trial on the fs layer keeps an op log and no VFS recovery", o.Condition, o.Point, o.FS != nil, o.Recovery != nil)
			continue
		}
		fs++
	}
	if fs == 0 {
		t.Fatal("no trial ran on the fs layer")
	}
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	if st.PowerLayer != engine.LayerFS {
		t.Errorf("settings record power layer %q, want %q", st.PowerLayer, engine.LayerFS)
	}
}

// differences lists every failing cell of a result, as "[condition]
// path".
func differences(r results.ScenarioResult) []string {
	var out []string
	for _, c := range r.Conditions {
		for _, d := range c.Differences {
			out = append(out, "["+c.Name+"]"+d.Path)
		}
	}
	return out
}

// TestFSLayerBrokenCutFails: a filesystem whose cut keeps everything under
// drop must fail the cross-check on exactly the cells where the model's
// power cut differs from what a kill leaves, naming each, and leave
// nothing mounted (IDEMLAB_TEST_FS_MATRIX=1: on the whole default matrix's power cuts).
func TestFSLayerBrokenCutFails(t *testing.T) {
	requireFUSE(t)
	t.Setenv(worker.EnvBreak, breakFSKeep)
	flags := fsMatrixOr(map[string]string{FlagPattern: PatternSingle + "," + PatternSeparate, FlagJournalMode: "DELETE,WAL", FlagSynchronous: "NORMAL,EXTRA", FlagKind: KindPower, FlagPowerLayer: engine.LayerFS})
	out := scenariotest.Run(t, New(), "", flags)
	noMounts(t, "a failing run")
	if out.Result.Pass {
		t.Fatal("the broken cut passed the cross-check")
	}
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	// The cells a keep-everything cut must get wrong: where the model's
	// drop cut ends otherwise than a kill, which keeps everything too.
	// The broken server still records the planned outcome, so the files
	// the fold names removed or brought back agree with the model; the
	// rows read back do not.
	compareFailingCells(t, out, func(c Condition) Condition { c.Kind = KindKill; return c },
		func(power, keep Want) bool { return power.Outcome != keep.Outcome || power.RowsLost != keep.RowsLost })
}

// compareFailingCells holds the cells a broken cut failed in out to the
// ones the oracle says it must: each trial of each condition whose
// oracle, w, differs from the oracle of keep(condition) at the same
// point, the cut that keeps everything, by differs.
func compareFailingCells(t *testing.T, out scenariotest.Outcome, keep func(Condition) Condition, differs func(w, kept Want) bool) {
	t.Helper()
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for _, c := range st.Conditions {
		order, err := st.ModelOrder(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range order {
			w, err := st.wantOf(c, tr.Point)
			if err != nil {
				t.Fatal(err)
			}
			kept, err := st.wantOf(keep(c), tr.Point)
			if err != nil {
				t.Fatal(err)
			}
			if differs(w, kept) {
				want = append(want, c.Name+" "+tr.Point)
			}
		}
	}
	got := []string{}
	for _, c := range out.Result.Conditions {
		for _, d := range c.Differences {
			cell := c.Name + " " + strings.TrimPrefix(strings.SplitN(d.Path, "]", 2)[0], "[")
			if !slices.Contains(got, cell) {
				got = append(got, cell)
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 {
		t.Fatal("the model names no cell where a drop cut differs from a keep cut")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failing cells (-want +got):\n%s", diff)
	}
	t.Logf("the broken cut fails %d cells: %v", len(got), got)
}

// TestFSLayerTamper: editing one logged op, or the recorded outcome, of an
// fs trial fails the fold, naming the field.
func TestFSLayerTamper(t *testing.T) {
	requireFUSE(t)
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "DELETE", FlagSynchronous: "NORMAL", FlagKind: KindPower, FlagPowerLayer: engine.LayerFS}
	out := scenariotest.Run(t, New(), "", flags)
	if len(out.Findings) > 0 {
		t.Fatalf("a fresh run has findings: %v", out.Findings)
	}
	// The normal run: its cut after the ACK drops the returning journal.
	line := 0
	lastOp := func(m map[string]any, kind string) map[string]any {
		log := m["fs"].(map[string]any)["log"].([]any)
		for i := len(log) - 1; i >= 0; i-- {
			if op := log[i].(map[string]any); op["op"] == kind {
				return op
			}
		}
		t.Fatalf("no %s op in the log", kind)
		return nil
	}
	tampers := []struct {
		name, field string
		edit        func(m map[string]any)
	}{
		{"logged fsync dropped", "fs.outcome.", func(m map[string]any) {
			fs := m["fs"].(map[string]any)
			log := fs["log"].([]any)
			for i := len(log) - 1; i >= 0; i-- {
				if op := log[i].(map[string]any); op["op"] == powerfs.OpFsync || op["op"] == powerfs.OpFsyncDir {
					fs["log"] = append(log[:i:i], log[i+1:]...)
					return
				}
			}
		}},
		{"logged write longer", "fs.outcome.files", func(m map[string]any) {
			op := lastOp(m, powerfs.OpWrite)
			op["len"] = op["len"].(float64) + 4096
		}},
		{"logged base entry renamed", "fs.outcome.entries", func(m map[string]any) {
			op := lastOp(m, powerfs.OpBase)
			op["name"] = op["name"].(string) + "x"
		}},
		{"logged write's pid (no survivor changes)", "fs.outcome.log_sha256", func(m map[string]any) {
			lastOp(m, powerfs.OpWrite)["pid"] = 1
		}},
		{"log's hash removed", "fs.outcome.log_sha256", func(m map[string]any) {
			delete(m["fs"].(map[string]any)["outcome"].(map[string]any), "log_sha256")
		}},
		{"model", "fs.params", func(m map[string]any) {
			m["fs"].(map[string]any)["params"].(map[string]any)["model"] = powerfs.ModelKeep
		}},
		{"outcome", "fs.outcome.entries", func(m map[string]any) {
			o := m["fs"].(map[string]any)["outcome"].(map[string]any)
			o["entries"] = o["entries"].([]any)[1:]
		}},
	}
	for _, tt := range tampers {
		t.Run(tt.name, func(t *testing.T) {
			requireObsFinding(t, out, flags, line, tt.field, tt.edit)
		})
	}
	// The mount's server has a process line of its own, which the trial's
	// record names; an edit of either is found in raw-processes.jsonl.
	var o Observation
	if err := json.Unmarshal(out.Records.Observations[line].Raw, &o); err != nil {
		t.Fatal(err)
	}
	if o.FS == nil {
		t.Fatal("the normal run has no fs record")
	}
	server := slices.IndexFunc(out.Records.Processes, func(p results.Process) bool { return p.ID == o.FS.ServerProcessID })
	if server < 0 {
		t.Fatalf("the trial's record names no server process line (server_process_id %d)", o.FS.ServerProcessID)
	}
	if p := out.Records.Processes[server]; p.Worker != powerfs.WorkerName || p.PID == 0 || p.ExitCode != 0 {
		t.Fatalf("the server's line: worker %q, pid %d, exit %d", p.Worker, p.PID, p.ExitCode)
	}
	t.Run("folder made before servers were recorded", func(t *testing.T) {
		rec := scenariotest.Edit(t, out.Records, true, line, func(m map[string]any) {
			delete(m["fs"].(map[string]any), "server_process_id")
		})
		var procs []results.Process
		for _, p := range rec.Processes {
			if p.Worker != powerfs.WorkerName {
				procs = append(procs, p)
			}
		}
		var obs []results.Line
		for i, l := range rec.Observations {
			if i != line {
				// The other trials' records name their servers too.
				l = scenariotest.Edit(t, rec, true, i, func(m map[string]any) {
					delete(m["fs"].(map[string]any), "server_process_id")
				}).Observations[i]
			}
			obs = append(obs, l)
		}
		if findings := scenario.Evaluate(New(), flags, out.Settings, results.NewRecords(obs, procs)).AllFindings(); len(findings) > 0 {
			t.Errorf("an fs-layer folder without server lines has findings: %v", findings)
		}
	})
	for _, tt := range []struct {
		name, field string
		obs         bool
		edit        func(m map[string]any)
	}{
		{"server_process_id removed", "no observation refers to this process", true, func(m map[string]any) {
			delete(m["fs"].(map[string]any), "server_process_id")
		}},
		{"server exit", "exit_code", false, func(m map[string]any) { m["exit_code"] = 3 }},
		{"server killed", "exit_code", false, func(m map[string]any) { m["exit_code"], m["signal"] = -1, "killed" }},
		{"server's mount", "argv", false, func(m map[string]any) {
			argv := m["argv"].([]any)
			for i := range argv[:len(argv)-1] {
				if argv[i] == "-mnt" {
					argv[i+1] = "/elsewhere"
				}
			}
		}},
		{"server's worker", "worker", false, func(m map[string]any) { m["worker"] = "durability.first" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			index := server
			if tt.obs {
				index = line
			}
			rec := scenariotest.Edit(t, out.Records, tt.obs, index, tt.edit)
			findings := scenario.Evaluate(New(), flags, out.Settings, rec).AllFindings()
			if !slices.ContainsFunc(findings, func(f results.Finding) bool {
				return f.File == results.ProcessesFile && strings.Contains(f.String(), tt.field)
			}) {
				t.Errorf("no finding in %s naming %s; got %v", results.ProcessesFile, tt.field, findings)
			}
		})
	}
}

// TestFSLayerTorn: the fs layer's torn cuts, two seeds a trial, each made
// under the trial's seed and recorded; each ends in the allowed set
// (AllowedSet) with the exact model's files; the fold derives every cut
// again, and an edited decision or seed fails it, naming the field.
func TestFSLayerTorn(t *testing.T) {
	requireFUSE(t)
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "WAL", FlagSynchronous: "NORMAL", FlagKind: KindPower,
		FlagPowerLayer: engine.LayerFS, FlagFault: "torn", FlagFaultSeeds: "2"}
	out := scenariotest.Run(t, New(), "", flags)
	noMounts(t, "a torn run")
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("findings %v, pass %v, differences %v", out.Findings, out.Result.Pass, differences(out.Result))
	}
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	line, seeds := -1, map[int64]bool{}
	for i, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.FS == nil || o.Seed == nil {
			t.Fatalf("%s %s: fs record %v, seed index %v", o.Condition, o.Point, o.FS != nil, o.Seed)
		}
		if d := cmp.Diff(st.fsParams(*o.Seed), o.FS.Params); d != "" {
			t.Errorf("%s %s seed %d: params (-want +got):\n%s", o.Condition, o.Point, *o.Seed, d)
		}
		seeds[o.FS.Params.Seed] = true
		if line < 0 && len(o.FS.Outcome.Files) > 0 && o.FS.Outcome.Files[0].Decisions != "" {
			line = i
		}
	}
	if len(seeds) != 2 {
		t.Errorf("the trials were cut under seeds %v, want two", slices.Sorted(maps.Keys(seeds)))
	}
	if line < 0 {
		t.Fatal("no trial's cut decided a file's units")
	}
	t.Logf("%d trials under seeds %v; the tampered one's cut: %s", len(out.Records.Observations), slices.Sorted(maps.Keys(seeds)), out.Records.Observations[line].Raw)
	files := func(m map[string]any) map[string]any {
		return m["fs"].(map[string]any)["outcome"].(map[string]any)["files"].([]any)[0].(map[string]any)
	}
	for _, tt := range []struct {
		name, field string
		edit        func(m map[string]any)
	}{
		{"decision flipped", "fs.outcome.files[0].decisions", func(m map[string]any) {
			f := files(m)
			d := []byte(f["decisions"].(string))
			d[0] = map[byte]byte{'k': 'd', 'd': 'g', 'g': 'k'}[d[0]]
			f["decisions"] = string(d)
		}},
		{"params' seed", "fs.params.seed", func(m map[string]any) {
			p := m["fs"].(map[string]any)["params"].(map[string]any)
			p["seed"] = p["seed"].(float64) + 1
		}},
		{"params' unit", "fs.params.unit", func(m map[string]any) {
			m["fs"].(map[string]any)["params"].(map[string]any)["unit"] = 4096
		}},
		{"outcome's seed", "fs.outcome.seed", func(m map[string]any) {
			o := m["fs"].(map[string]any)["outcome"].(map[string]any)
			o["seed"] = o["seed"].(float64) + 1
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requireObsFinding(t, out, flags, line, tt.field, tt.edit)
		})
	}
}

// TestFSLayerSyncPoints: with --sync-points the fs layer cuts just before
// and just after each fsync the normal run's mount saw, each trial's first
// process killed in the frozen fsync; each cut is recorded at its sync and
// derived again, each outcome is in the allowed set (fsSyncWant), and an
// edited cut fails the fold naming the field.
func TestFSLayerSyncPoints(t *testing.T) {
	requireFUSE(t)
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "DELETE", FlagSynchronous: "FULL", FlagKind: KindPower,
		FlagPowerLayer: engine.LayerFS, FlagSyncPoints: "true"}
	out := scenariotest.Run(t, New(), "", flags)
	noMounts(t, "a sync-point run")
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("findings %v, pass %v, differences %v", out.Findings, out.Result.Pass, differences(out.Result))
	}
	syncs, line := 0, -1
	var got, want []string
	for i, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.FS == nil {
			t.Fatalf("%s %s: no fs record", o.Condition, o.Point)
		}
		if o.Point == PointACK {
			syncs = o.FS.Outcome.Syncs
			continue
		}
		cut, ok := ParseSyncPoint(o.Point)
		if !ok {
			continue
		}
		got = append(got, o.Point)
		if c := o.FS.Outcome.Cut; c == nil || c.Sync != cut.N {
			t.Errorf("%s: the cut fell at %+v", o.Point, c)
		}
		if line < 0 {
			line = i
		}
	}
	for n := 1; n <= syncs; n++ {
		want = append(want, fmt.Sprintf("sync-%d-before", n), fmt.Sprintf("sync-%d-after", n))
	}
	if syncs == 0 {
		t.Fatal("the normal run's mount saw no fsync")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sync trials (-want +got), over the %d fsyncs of the normal run's mount:\n%s", syncs, d)
	}
	t.Logf("%d fsyncs on the normal run's mount, %d sync trials", syncs, len(got))
	for _, tt := range []struct {
		name, field string
		edit        func(m map[string]any)
	}{
		{"logged cut moved", "fs.outcome.cut", func(m map[string]any) {
			log := m["fs"].(map[string]any)["log"].([]any)
			for _, op := range log {
				if op := op.(map[string]any); op["op"] == powerfs.OpCut {
					op["sync"] = op["sync"].(float64) + 1
				}
			}
		}},
		{"recorded cut moved", "fs.outcome.cut", func(m map[string]any) {
			c := m["fs"].(map[string]any)["outcome"].(map[string]any)["cut"].(map[string]any)
			c["at"] = "command"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requireObsFinding(t, out, flags, line, tt.field, tt.edit)
		})
	}
}

// TestFSLayerDirModel: --dir-model ext4-ordered is recorded in the
// settings and in every trial's params, under which the mount cut; the
// fold derives each cut again under it, and a trial whose params name
// another directory model fails it, naming the field.
func TestFSLayerDirModel(t *testing.T) {
	requireFUSE(t)
	flags := map[string]string{FlagPattern: PatternSingle, FlagJournalMode: "DELETE,WAL", FlagSynchronous: "NORMAL", FlagKind: KindPower,
		FlagPowerLayer: engine.LayerFS, FlagDirModel: powerfs.DirExt4}
	out := scenariotest.Run(t, New(), "", flags)
	noMounts(t, "an ext4-ordered run")
	if len(out.Findings) > 0 || !out.Result.Pass {
		t.Fatalf("findings %v, pass %v, differences %v", out.Findings, out.Result.Pass, differences(out.Result))
	}
	var st Settings
	if err := json.Unmarshal(out.Settings, &st); err != nil {
		t.Fatal(err)
	}
	if st.DirModel != powerfs.DirExt4 {
		t.Errorf("settings record dir_model %q, want %q", st.DirModel, powerfs.DirExt4)
	}
	for _, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.FS == nil || o.FS.Params.DirModel != powerfs.DirExt4 || o.FS.Outcome.DirModel != powerfs.DirExt4 {
			t.Fatalf("%s %s: fs record %+v", o.Condition, o.Point, o.FS)
		}
	}
	rec := scenariotest.Edit(t, out.Records, true, 0, func(m map[string]any) {
		m["fs"].(map[string]any)["params"].(map[string]any)["dir_model"] = powerfs.DirPOSIX
	})
	findings := scenario.Evaluate(New(), flags, out.Settings, rec).AllFindings()
	if !slices.ContainsFunc(findings, func(f results.Finding) bool { return strings.Contains(f.String(), "fs.params.dir_model") }) {
		t.Errorf("no finding naming fs.params.dir_model; got %v", findings)
	}
}

func TestPowerLayerRefused(t *testing.T) {
	tests := []struct {
		overrides map[string]string
		want      string
	}{
		{map[string]string{FlagPowerLayer: "disk"}, `--power-layer: "disk" is not one of vfs, fs`},
		{map[string]string{FlagPowerLayer: engine.LayerFS, FlagFault: "shred"}, `--fault: "shred" is not one of drop, keep, torn`},
		{map[string]string{FlagDirModel: powerfs.DirExt4}, `--dir-model: only with durability.power_layer fs`},
		{map[string]string{FlagPowerLayer: engine.LayerFS, FlagDirModel: "btrfs"}, `--dir-model: "btrfs" is not one of posix, ext4-ordered`},
	}
	for _, tt := range tests {
		_, err := New().Plan(context.Background(), scenario.PlanRequest{Overrides: tt.overrides})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%v) = %v, want an error containing %q", tt.overrides, err, tt.want)
		}
	}
	// A machine without FUSE: the fs layer is refused in one line that
	// names what is missing; the VFS layer runs as ever.
	without := scenario.Machine{FUSE: "FUSE is missing: no /dev/fuse"}
	_, err := New().Plan(context.Background(), scenario.PlanRequest{Overrides: map[string]string{FlagPowerLayer: engine.LayerFS}, Machine: without})
	if want := "--power-layer fs: FUSE is missing: no /dev/fuse"; err == nil || err.Error() != want {
		t.Errorf("without FUSE: %v, want %q", err, want)
	}
	if _, err := New().Plan(context.Background(), scenario.PlanRequest{Overrides: map[string]string{FlagPowerLayer: engine.LayerVFS}, Machine: without}); err != nil {
		t.Errorf("the VFS layer without FUSE: %v", err)
	}
}

// TestPowerLayerFromTheRecordedMachine: the fs layer's plan is a function
// of the plan request's machine fact alone (a run's probe, a folder's
// record), so verify on any machine derives what the run planned: with
// FUSE recorded the layer is fs, without it the plan is refused naming
// the recorded reason, and the VFS layer is the same either way.
func TestPowerLayerFromTheRecordedMachine(t *testing.T) {
	const why = "FUSE is missing: recorded"
	for _, tt := range []struct {
		fuse, layer string
		want        string // the settings' power_layer; "" with refused
		refused     bool
	}{
		{"", engine.LayerFS, engine.LayerFS, false},
		{why, engine.LayerFS, "", true},
		{"", engine.LayerVFS, "", false},
		{why, engine.LayerVFS, "", false},
	} {
		req := scenario.PlanRequest{Overrides: map[string]string{FlagPowerLayer: tt.layer}, Machine: scenario.Machine{FUSE: tt.fuse}}
		p, err := New().Plan(context.Background(), req)
		if tt.refused {
			if err == nil || !strings.HasSuffix(err.Error(), why) {
				t.Errorf("fuse %q, layer %s: %v, want a refusal naming %q", tt.fuse, tt.layer, err, why)
			}
			continue
		}
		if err != nil {
			t.Fatalf("fuse %q, layer %s: %v", tt.fuse, tt.layer, err)
		}
		if d := cmp.Diff(tt.want, p.Settings().(Settings).PowerLayer); d != "" {
			t.Errorf("fuse %q, layer %s: power_layer (-want +got):\n%s", tt.fuse, tt.layer, d)
		}
	}
}
