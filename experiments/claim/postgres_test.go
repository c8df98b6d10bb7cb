package claim

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/store"
)

// TestPostgresIsolationLevels runs every round and mutant once, with four
// racers, on a throwaway cluster under each isolation level, and reaches
// the verdict as the experiment does. Under READ COMMITTED the oracle also
// says that no racer met a serialization failure, which the records must
// show; under the other two the losers' 40001 retries are counted.
func TestPostgresIsolationLevels(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	spec := backend.Spec{Name: store.BackendPostgres, SynchronousCommit: "off"}
	srv, err := backend.Start(context.Background(), backend.Spec{Name: store.BackendPostgres, Isolation: "read-committed", SynchronousCommit: "off"}, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, iso := range store.Isolations {
		t.Run(iso.String(), func(t *testing.T) {
			spec.Isolation = iso.String()
			ov := map[string]string{"workers": "4", "repetitions": "1", "mutant-repetitions": "1"}
			p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: spec, Section: section(t, smallInput(8, 20)), Overrides: ov})
			if err != nil {
				t.Fatal(err)
			}
			env := harnesstest.New(t)
			// A server started for one isolation level serves the others:
			// each session's level is in its connection string.
			if err := p.Run(context.Background(), scenario.Env{Runner: env.Runner, Recorder: env.Recorder, TempDir: t.TempDir(), Backend: srv.WithSpec(spec)}); err != nil {
				t.Fatal(err)
			}
			if err := env.Recorder.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(env.Dir, results.InputCopyFile), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			folder, err := results.LoadRecords(env.Dir, results.Limits{})
			if err != nil || len(folder.Findings) > 0 {
				t.Fatalf("load: %v %v", err, folder.Findings)
			}
			res := scenario.Evaluate(New(), ov, scenario.Marshal(p.Settings()), folder.Records(Name))
			for _, f := range res.AllFindings() {
				t.Errorf("finding: %s", f)
			}
			for _, c := range res.Conditions {
				if !c.Pass {
					t.Errorf("%s: %+v", c.Name, c.Differences)
				}
			}
			var ex Extra
			if err := json.Unmarshal(res.Extra, &ex); err != nil || ex.PostgresReadBack == nil {
				t.Fatalf("extra %s: %v", res.Extra, err)
			}
			if got, want := ex.PostgresReadBack.DefaultTransactionIsolation, iso.SQL(); got != want {
				t.Errorf("the racers read back %q, want %q", got, want)
			}
			for cond, n := range ex.SerializationRetries {
				if iso == store.ReadCommitted && n != 0 {
					t.Errorf("%s: %d serialization retries under READ COMMITTED", cond, n)
				}
			}
		})
	}
}
