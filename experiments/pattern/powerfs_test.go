package pattern

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
)

// osFiles reads the files a plan names from the disk.
type osFiles struct{}

func (osFiles) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// TestProgramPowerWhereFUSEIsMissing: without FUSE a program's power
// class is not applicable, said with what is missing; the plan still
// holds its other classes, and --faults power asked for explicitly is a
// usage error (exit 2) with that line. With FUSE, the program gets its
// power conditions.
func TestProgramPowerWhereFUSEIsMissing(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "handlers", "single-transaction.json")
	const why = "FUSE is missing: no /dev/fuse"
	for _, tt := range []struct {
		name    string
		missing string
		faults  string
		// want are the power conditions; usage says the plan is refused.
		want  []string
		usage bool
	}{
		{"missing, every class", why, "", nil, false},
		{"missing, power asked for", why, "points,power", nil, true},
		{"present", "", "power", []string{"power:DELETE/EXTRA"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ov := map[string]string{"pattern-file": file, "power": "DELETE/EXTRA"}
			if tt.faults != "" {
				ov["faults"] = tt.faults
			}
			p, err := Scenario{}.Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Overrides: ov, Files: osFiles{}, Machine: scenario.Machine{FUSE: tt.missing}})
			if tt.usage {
				// The plan is refused; the edge (suite.PlanAll) makes it a
				// usage error, once.
				if err == nil || !strings.Contains(err.Error(), "power: not applicable to a handler program: "+why) || strings.Contains(err.Error(), errclass.ErrUsage.Error()) {
					t.Fatalf("err %v, want a refusal naming %q, not classed by the scenario", err, why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := p.(*plan).s
			got := powerConditions(st, st.Patterns[0].File.Name+"/")
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("power conditions (-want +got):\n%s", d)
			}
			if g := st.Patterns[0].PowerNotApplicable; g != tt.missing {
				t.Errorf("power_not_applicable %q, want %q", g, tt.missing)
			}
		})
	}
}
