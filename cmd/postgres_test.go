package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/all"
	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// needPostgres skips a test, saying why, where the server's binaries are
// not installed.
func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
}

// TestPostgresLeavesNothing runs on a throwaway cluster three ways, a run
// that passes, a run whose workers all fail (exit 5: a result, the run
// fails its expectations), and a run interrupted while the server is up,
// and after each finds no process of the server's group and no cluster
// folder; the interrupted run writes no folder.
func TestPostgresLeavesNothing(t *testing.T) {
	needPostgres(t)
	for _, tt := range []struct {
		name      string
		env       string
		interrupt bool
		code      int
		stderr    string
	}{
		{name: "run", code: 0},
		{name: "failure", env: "1", code: 1, stderr: "exited 5"},
		{name: "interrupt", interrupt: true, code: 130, stderr: "interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("CMDTEST_CHILD_EXIT5", tt.env)
			}
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var info *backend.Info
			h := Hooks{OnBackend: func(i backend.Info) {
				info = &i
				if tt.interrupt {
					cancel()
				}
			}}
			var out, errb bytes.Buffer
			code := execute(ctx, []string{"experiment", "--quiet", "--backend", "postgres", "--scenario", "redelivery", "--input", goodInput, "--out", filepath.Join(dir, "results")},
				Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, h)
			if code != tt.code || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), tt.code, tt.stderr)
			}
			if info == nil || info.Cluster == nil {
				t.Fatal("the run started no cluster")
			}
			if left := backend.ClusterProcesses(info.Cluster.Dir); len(left) > 0 {
				t.Errorf("processes of the server (pid %d) survive the run: %v", info.Cluster.PID, left)
			}
			if _, err := os.Stat(info.Cluster.Dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the cluster's folder %s survives the run (%v)", info.Cluster.Dir, err)
			}
			if tt.interrupt {
				assertOnly(t, dir)
			}
		})
	}
}

// TestScenariosOnPostgres: redelivery, batch, claim, explore, durability
// and pattern (with a shipped pattern file) declare PostgreSQL and plan on
// it, each from its section of ../input.json (durability from its
// defaults), with no error at all; every other scenario refuses it, saying
// why in its own words.
func TestScenariosOnPostgres(t *testing.T) {
	spec := backend.Spec{Name: "postgres", Isolation: "read-committed", SynchronousCommit: "on"}
	runs := map[string]bool{"redelivery": true, "batch": true, "claim": true, "explore": true, "durability": true, "pattern": true}
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(readFile(t, "../input.json"), &sections); err != nil {
		t.Fatal(err)
	}
	planned := 0
	for _, s := range all.Scenarios(sourcePatterns) {
		req := scenario.PlanRequest{Backend: spec, Section: sections[s.Name()], Files: &suite.DiskFiles{}}
		if s.Name() == "pattern" {
			req.Overrides = map[string]string{"pattern-file": "../testdata/patterns/separate-commit.json"}
		}
		_, err := s.Plan(context.Background(), req)
		if s.Caps().RunsOn(spec) != runs[s.Name()] {
			t.Errorf("%s declares postgres %v, want %v", s.Name(), s.Caps().RunsOn(spec), runs[s.Name()])
		}
		if runs[s.Name()] {
			if err != nil {
				t.Errorf("%s on postgres: %v; want it to plan", s.Name(), err)
			} else {
				planned++
			}
			continue
		}
		if !errors.Is(err, backend.ErrNotOnBackend) {
			t.Errorf("%s on postgres: %v; want it to refuse", s.Name(), err)
		} else if strings.Contains(err.Error(), "not been ported") {
			t.Errorf("%s refuses without saying why: %v", s.Name(), err)
		}
	}
	if planned != len(runs) {
		t.Errorf("%d scenarios planned on postgres, want %d", planned, len(runs))
	}
}
