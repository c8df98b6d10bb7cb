package pattern

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
)

// TestPowerOnPostgresPlan: on PostgreSQL a pattern file's power class is
// opt-in: asked for, it is one condition, the run's synchronous_commit
// with fsync and full_page_writes on; not asked for, it is recorded as
// not run, with why; asked for where FUSE is missing, the plan is refused
// with one line saying what is missing. A handler program gets the same
// condition.
func TestPowerOnPostgresPlan(t *testing.T) {
	article := filepath.Join("..", "..", "testdata", "patterns", "single-transaction.json")
	program := filepath.Join("..", "..", "testdata", "handlers", "single-transaction-psql.json")
	const why = "FUSE is missing: no /dev/fuse"
	pg := backend.Spec{Name: "postgres", Isolation: "read-committed", SynchronousCommit: "off"}
	const cell = "single-transaction/power:"
	for _, tt := range []struct {
		name, file, faults, missing string
		// flags are the matrix's, if any.
		flags map[string]string
		// want are the power conditions' names; err the refusal.
		want   []string
		notRun bool
		err    string
	}{
		{"asked for", article, "points,power", "", nil, []string{"single-transaction/power:fsync=on,synchronous_commit=off,full_page_writes=on"}, false, ""},
		{"not asked for", article, "", "", nil, nil, true, ""},
		{"asked for without FUSE", article, "power", why, nil, nil, false, "usage error: pattern.faults: power: not applicable on PostgreSQL: " + why},
		{"a program, asked for", program, "power", "", nil, []string{"single-transaction-psql/power:fsync=on,synchronous_commit=off,full_page_writes=on"}, false, ""},
		{"the full matrix", article, "power", "", map[string]string{"fsync": "off,on", "synchronous-commits": "on,off", "full-page-writes": "on,off"}, []string{
			cell + "fsync=on,synchronous_commit=on,full_page_writes=on", cell + "fsync=on,synchronous_commit=on,full_page_writes=off",
			cell + "fsync=on,synchronous_commit=off,full_page_writes=on", cell + "fsync=on,synchronous_commit=off,full_page_writes=off",
			cell + "fsync=off,synchronous_commit=on,full_page_writes=on", cell + "fsync=off,synchronous_commit=on,full_page_writes=off",
			cell + "fsync=off,synchronous_commit=off,full_page_writes=on", cell + "fsync=off,synchronous_commit=off,full_page_writes=off",
		}, false, ""},
		{"fsync off alone", article, "power", "", map[string]string{"fsync": "off"}, []string{cell + "fsync=off,synchronous_commit=off,full_page_writes=on"}, false, ""},
		{"an unknown value", article, "power", "", map[string]string{"full-page-writes": "sometimes"}, nil, false,
			`usage error: --full-page-writes: "sometimes": want each of on, off at most once`},
		{"a value twice", article, "power", "", map[string]string{"synchronous-commits": "on,on"}, nil, false,
			`usage error: --synchronous-commits: "on": want each of on, local, off at most once`},
		{"without the power class", article, "points", "", map[string]string{"fsync": "off"}, nil, false,
			"usage error: --fsync: only with --backend postgres --faults power"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ov := map[string]string{"pattern-file": tt.file}
			for k, v := range tt.flags {
				ov[k] = v
			}
			if tt.faults != "" {
				ov["faults"] = tt.faults
			}
			p, err := Scenario{}.Plan(context.Background(), scenario.PlanRequest{Backend: pg, Overrides: ov, Files: osFiles{}, Machine: scenario.Machine{FUSE: tt.missing}})
			if tt.err != "" {
				if !errors.Is(err, errclass.ErrUsage) || err.Error() != tt.err {
					t.Fatalf("err %v, want the usage error %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := p.(*plan).s
			if d := cmp.Diff(tt.want, powerConditions(st, "")); d != "" {
				t.Errorf("power conditions (-want +got):\n%s", d)
			}
			if n := len(st.NotRun) > 0 && st.NotRun[0].Fault == wp.FaultPower; n != tt.notRun {
				t.Errorf("power not run = %v, want %v (%+v)", n, tt.notRun, st.NotRun)
			}
		})
	}
}

// powerConditions names the settings' power conditions, each without the
// prefix trim.
func powerConditions(st Settings, trim string) []string {
	var out []string
	for _, c := range st.Conditions {
		if c.Fault == wp.FaultPower {
			out = append(out, strings.TrimPrefix(c.Name, trim))
		}
	}
	return out
}
