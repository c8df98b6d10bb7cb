package patternfile

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	wp "idemlab/worker/pattern"
	"idemlab/worker/store"
)

// TestRecordedProgramEnv: a folder recorded before a session was built as
// values, a psql program on PostgreSQL under repeatable read with
// synchronous_commit local, gets from ProgramEnv, for every delivery, the
// environment its process recorded, byte for byte; the run's own form,
// from the session values the recorded target was made of, gives the
// same.
func TestRecordedProgramEnv(t *testing.T) {
	f, err := results.Load(filepath.Join("..", "..", "..", "testdata", "golden", "pattern-postgres-program"), results.Limits{})
	if err != nil || f.Results == nil || len(f.Findings) > 0 {
		t.Fatalf("load the recorded folder: %v %v", err, f.Findings)
	}
	var st Settings
	if err := json.Unmarshal(f.Results.Scenarios[0].Settings, &st); err != nil {
		t.Fatal(err)
	}
	if lvl, _ := st.Postgres.Level(); st.Backend != store.BackendPostgres || lvl != store.RepeatableRead {
		t.Fatalf("the folder runs %s under %+v; this test wants PostgreSQL under repeatable read", st.Backend, st.Postgres)
	}
	env := map[int]map[string]string{}
	for _, p := range f.Processes {
		env[p.ID] = p.Env
	}
	n := 0
	for _, l := range f.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		sess, err := store.ParseSession(o.DB)
		if err != nil {
			t.Fatalf("line %d: %v", l.N, err)
		}
		if got := sess.DSN(); got != o.DB {
			t.Errorf("line %d: the session read back makes %q, the folder recorded %q", l.N, got, o.DB)
		}
		for _, d := range o.Deliveries {
			n++
			want := env[d.ProcessID]
			if diff := cmp.Diff(want, ProgramEnv(st, o, d)); diff != "" {
				t.Errorf("line %d process %d: ProgramEnv (-recorded +derived):\n%s", l.N, d.ProcessID, diff)
			}
			if got := programEnv(st, o, d, &sess)[wp.EnvDSN]; got != want[wp.EnvDSN] {
				t.Errorf("line %d: the run gives %q, the folder recorded %q", l.N, got, want[wp.EnvDSN])
			}
		}
	}
	if n == 0 {
		t.Fatal("the folder records no delivery")
	}
}
