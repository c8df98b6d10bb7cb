package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestLoadRecordsPerScenario: the loader keeps each process line as
// encoding/json decodes it (its repeated strings kept once), and a
// scenario's records are its lines in file order, whether the folder
// holds one scenario (the folder's own lines are handed out) or several;
// an append to one scenario's records leaves the folder's lines as they
// were.
func TestLoadRecordsPerScenario(t *testing.T) {
	proc := func(id int, scenario, stdout string) string {
		b, _ := json.Marshal(ProcessRecord{ID: id, Scenario: scenario, Condition: "c", Worker: "w", Argv: []string{"idemlab", "worker", "w", "-x"}, Env: map[string]string{"K": "v"}, Stdout: stdout, ExecutableSHA256: "abc"})
		return string(b)
	}
	obs := func(scenario string, trial int) string {
		b, _ := json.Marshal(map[string]any{"scenario": scenario, "condition": "c", "trial": trial})
		return string(b)
	}
	tests := []struct {
		name       string
		obs, procs []string
		scenarios  []string
	}{
		{
			name:      "one scenario",
			obs:       []string{obs("a", 0), obs("a", 1), obs("a", 2)},
			procs:     []string{proc(1, "a", "same"), proc(2, "a", "same"), proc(3, "a", "other")},
			scenarios: []string{"a", "b"},
		},
		{
			name:      "two scenarios, interleaved",
			obs:       []string{obs("a", 0), obs("b", 0), obs("a", 1)},
			procs:     []string{proc(1, "b", "same"), proc(2, "a", "same"), proc(3, "b", "")},
			scenarios: []string{"a", "b", "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, lines := range map[string][]string{ObservationsFile: tt.obs, ProcessesFile: tt.procs} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, InputCopyFile), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := LoadRecords(dir, Limits{})
			if err != nil || len(f.Findings) > 0 {
				t.Fatalf("load: %v %v", err, f.Findings)
			}
			var want []Process
			for i, l := range tt.procs {
				var p ProcessRecord
				if err := json.Unmarshal([]byte(l), &p); err != nil {
					t.Fatal(err)
				}
				want = append(want, Process{N: i + 1, ProcessRecord: p})
			}
			if d := cmp.Diff(want, f.Processes); d != "" {
				t.Errorf("processes (-json.Unmarshal +loader):\n%s", d)
			}
			for _, s := range tt.scenarios {
				var wantObs []Line
				for _, l := range f.Observations {
					if l.Scenario == s {
						wantObs = append(wantObs, l)
					}
				}
				var wantProcs []Process
				for _, p := range f.Processes {
					if p.Scenario == s {
						wantProcs = append(wantProcs, p)
					}
				}
				r := f.Records(s)
				if d := cmp.Diff(wantObs, r.Observations, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("%s observations (-want +got):\n%s", s, d)
				}
				if d := cmp.Diff(wantProcs, r.Processes); d != "" {
					t.Errorf("%s processes (-want +got):\n%s", s, d)
				}
				// Two callers' appends do not land in one array.
				r2 := f.Records(s)
				r.Observations = append(r.Observations, Line{N: 99})
				r2.Observations = append(r2.Observations, Line{N: 98})
				if got := r.Observations[len(r.Observations)-1].N; got != 99 {
					t.Errorf("%s: another caller's append overwrote this one's line (%d, want 99)", s, got)
				}
			}
		})
	}
}
