package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
)

// TestProgramPowerTornPages runs the shipped Python handler's power class
// under WAL/NORMAL with --fault-unit 4096: every torn cut on its mount is
// made and recorded in 4 KiB units (one decision per page of each file's
// unsynced spans, which 512-byte units would not give), every other cut
// records the sector; the folder verifies, and the recorded unit edited
// fails verify naming the field.
func TestProgramPowerTornPages(t *testing.T) {
	needPython(t)
	needFUSE(t)
	ownTmp(t)
	r, out := runPattern(t, "../testdata/handlers/single-transaction.json", "--faults", "power", "--power", "WAL/NORMAL", "--fault-unit", "4096")
	noPowerMounts(t, "a run")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (known_unsafe lists WAL/NORMAL):\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "each unsynced 4096-byte unit") {
		t.Errorf("the table's legend does not name the 4096-byte unit:\n%s", r.stdout)
	}
	obs, lines := readPowerObs(t, out)
	torn, paged := 0, 0
	for _, o := range obs {
		want := map[bool]int{true: faultvfs.UnitPage, false: faultvfs.UnitSector}[o.Model == powerfs.ModelTorn]
		if got := o.PowerFS.Params.Unit; got != want || o.PowerFS.Outcome.Unit != want {
			t.Errorf("trial %d (%s): params unit %d, outcome unit %d, want %d", o.Trial, o.Model, got, o.PowerFS.Outcome.Unit, want)
		}
		if o.Model != powerfs.ModelTorn {
			continue
		}
		torn++
		for _, f := range o.PowerFS.Outcome.Files {
			if n := len(faultvfs.Units(f.Spans, faultvfs.UnitPage)); n != len(f.Decisions) {
				t.Errorf("trial %d, %s: %d decisions for %d pages of %v", o.Trial, f.Path, len(f.Decisions), n, f.Spans)
			}
			if len(faultvfs.Units(f.Spans, faultvfs.UnitSector)) != len(f.Decisions) {
				paged++
			}
		}
	}
	if torn == 0 || paged == 0 {
		t.Fatalf("%d torn trials, %d files whose pages are not sectors: the unit was never put to the test", torn, paged)
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
		t.Fatalf("verify exit %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
	for i, l := range lines {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(l))
		dec.UseNumber() // a torn seed does not fit a float64
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m["model"] != powerfs.ModelTorn || m["powerfs"] == nil {
			continue
		}
		m["powerfs"].(map[string]any)["params"].(map[string]any)["unit"] = faultvfs.UnitSector
		b, _ := json.Marshal(m)
		edited := append([]string{}, lines...)
		edited[i] = string(b)
		if v := verifyObservations(t, out, edited); v.code != 1 || !strings.Contains(v.stdout, "powerfs.params.unit") {
			t.Errorf("a torn trial's unit edited to 512: verify exit %d, want 1 and a finding on powerfs.params.unit:\n%s%s", v.code, v.stdout, v.stderr)
		}
		return
	}
	t.Fatal("no torn trial to edit")
}

// TestPatternPowerFlagsRefused: a bad unit, by flag or in input.json, or
// a unit without the power class, and --sync-points where it would sweep
// nothing (without the power class, or on a pattern file the built-in
// worker runs, on SQLite or PostgreSQL), are refused with exit 2 in one
// line naming the field, and no folder is made.
func TestPatternPowerFlagsRefused(t *testing.T) {
	input := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(input, []byte(`{"pattern": {"fault_unit": 1024}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	file := "../testdata/patterns/single-transaction.json"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"by flag", []string{"--faults", "power", "--fault-unit", "2048"}, "--fault-unit 2048: want 512 or 4096"},
		{"in the input", []string{"--faults", "power", "--input", input}, "pattern.fault_unit 1024: want 512 or 4096"},
		{"without the power class", []string{"--faults", "points", "--fault-unit", "4096"}, "--fault-unit: only with the power class (--faults power)"},
		{"sync points without the power class", []string{"--faults", "points", "--sync-points"}, "--sync-points: only with the power class (--faults power)"},
		{"sync points on the built-in worker", []string{"--faults", "power", "--sync-points"}, "--sync-points: sweeps a handler program's power cuts only (the fsyncs on its mount), and " + file + " is run by the built-in worker"},
		{"sync points on the built-in worker on PostgreSQL", []string{"--backend", "postgres", "--faults", "power", "--sync-points"}, "--sync-points: sweeps a handler program's power cuts only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, out := runPattern(t, file, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 2 and %q on stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused run left %s (%v)", out, err)
			}
		})
	}
}
