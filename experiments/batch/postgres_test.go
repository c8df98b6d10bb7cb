package batch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	"idemlab/worker/store"
)

// pgSection is a small batch with crash, resolve and retry on every
// journal condition: both modes, two trials, first runs side by side.
const pgSection = `{"job_id":"job-1","items":5,"fail_at":3,"modes":["before_accept","after_accept"],"trials":2,"first_run_lanes":2,"latency_ms":{"validate":0.1,"transform":0.1,"send":0.2}}`

// startPostgres starts a throwaway cluster for one test, or skips the
// test, saying why, where the binaries are missing.
func startPostgres(t *testing.T, spec backend.Spec) *backend.Server {
	t.Helper()
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	srv, err := backend.Start(context.Background(), spec, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestPlanOnPostgres: on PostgreSQL the plan has every condition of the
// SQLite plan, the same oracle and the same process count; it records the
// backend, the settings every session must read back and what is left
// out, and no SQLite pragmas. It needs no server.
func TestPlanOnPostgres(t *testing.T) {
	spec := backend.Spec{Name: store.BackendPostgres, Isolation: "serializable", SynchronousCommit: "local"}
	pg, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: spec, Section: json.RawMessage(pgSection)})
	if err != nil {
		t.Fatal(err)
	}
	sq, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(pgSection)})
	if err != nil {
		t.Fatal(err)
	}
	st, sqst := pg.Settings().(Settings), sq.Settings().(Settings)
	want := &store.PGRequested{Isolation: "serializable", SynchronousCommit: "local"}
	if st.Backend != store.BackendPostgres || st.SQLite.JournalMode != "" || len(st.NotOnPostgres) != len(NotOnPostgres) || !cmp.Equal(st.Postgres, want) {
		t.Errorf("settings on PostgreSQL: backend %q postgres %+v sqlite %+v not run %v", st.Backend, st.Postgres, st.SQLite, st.NotOnPostgres)
	}
	if d := cmp.Diff(sqst.Conditions, st.Conditions); d != "" {
		t.Errorf("conditions differ from SQLite's (-sqlite +postgres):\n%s", d)
	}
	pgExp, err1 := Scenario{}.Expect(st)
	sqExp, err2 := Scenario{}.Expect(sqst)
	if d := cmp.Diff(sqExp, pgExp); d != "" || err1 != nil || err2 != nil {
		t.Errorf("oracle differs from SQLite's (%v, %v; -sqlite +postgres):\n%s", err1, err2, d)
	}
	if pg.Processes() != sq.Processes() {
		t.Errorf("%d processes on PostgreSQL, %d on SQLite", pg.Processes(), sq.Processes())
	}
	for _, tt := range []struct {
		st   Settings
		ex   Extra
		want string
	}{
		{st, Extra{PostgresReadBack: &store.PGSettings{ServerVersion: "15.18 (Debian)", DefaultTransactionIsolation: "serializable", SynchronousCommit: "local"}}, "PostgreSQL 15.18, serializable, synchronous_commit=local"},
		{st, Extra{}, "(requested; no worker read them back)"},
		{sqst, Extra{}, "SQLite journal_mode=WAL synchronous=NORMAL"},
	} {
		if got := (Scenario{}).Compare(tt.st, results.ScenarioResult{}, tt.ex).Database; !strings.Contains(got, tt.want) {
			t.Errorf("compare's database %q, want it to say %q", got, tt.want)
		}
	}
}

// TestPostgresBatch runs every condition of the batch on a real cluster
// with real processes and the real receiver: each journal trial in a
// schema of its own, the oracle's figures reached, exactly the processes
// the plan counts, and the sessions' settings read back. Then two
// tampered records, each of which the fold must catch.
func TestPostgresBatch(t *testing.T) {
	spec := backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: "off"}
	srv := startPostgres(t, spec)
	ov := map[string]string{FlagConcurrentModes: "true"}
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: spec, Section: json.RawMessage(pgSection), Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	out := scenariotest.RunOn(t, New(), spec, srv, pgSection, ov)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
	if got, want := len(out.Records.Processes), p.Processes(); got != want {
		t.Errorf("the run recorded %d processes, its plan counts %d", got, want)
	}
	var ex Extra
	if err := json.Unmarshal(out.Result.Extra, &ex); err != nil {
		t.Fatal(err)
	}
	if rb := ex.PostgresReadBack; rb == nil || rb.SynchronousCommit != "off" || rb.DefaultTransactionIsolation != "read committed" || rb.ServerVersion == "" {
		t.Errorf("postgres_read_back %+v", rb)
	}
	schemas := map[string]bool{}
	for _, l := range out.Records.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.DB != "" && o.Step == "run 1" {
			if !strings.Contains(o.DB, "search_path=") || schemas[o.DB] {
				t.Errorf("%s trial %d: journal %q is no fresh schema of its own", o.Condition, o.Trial, o.DB)
			}
			schemas[o.DB] = true
		}
	}
	checkTampered(t, out, ov)
}

// checkTampered edits the records of a passing run as a tamperer would and
// evaluates them again: a run whose session read back another
// synchronous_commit, a journal row the parent read deleted from the
// record, and a lone run that says its marks met 40001. Each must be a
// finding.
func checkTampered(t *testing.T, out scenariotest.Outcome, ov map[string]string) {
	t.Helper()
	run := -1
	for i, pr := range out.Records.Processes {
		if strings.Contains(pr.Stdout, `"synchronous_commit":"off"`) {
			run = i
			break
		}
	}
	if run < 0 {
		t.Fatal("no journal run reported its session's synchronous_commit")
	}
	readBack := scenariotest.Edit(t, out.Records, false, run, func(m map[string]any) {
		m["stdout"] = strings.Replace(m["stdout"].(string), `"synchronous_commit":"off"`, `"synchronous_commit":"on"`, 1)
	})
	retried := scenariotest.Edit(t, out.Records, false, run, func(m map[string]any) {
		var rep map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(m["stdout"].(string))), &rep); err != nil {
			t.Fatal(err)
		}
		rep["result"].(map[string]any)["serialization_retries"] = 3
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		m["stdout"] = string(b) + "\n"
	})
	obs := -1
	for i, l := range out.Records.Observations {
		if strings.Contains(string(l.Raw), `"journal":[{`) {
			obs = i
			break
		}
	}
	row := scenariotest.Edit(t, out.Records, true, obs, func(m map[string]any) {
		m["journal"] = m["journal"].([]any)[1:]
	})
	for _, tt := range []struct {
		name string
		rec  results.Records
		want string
	}{
		{"read back", readBack, "the worker's session read back"},
		{"journal row", row, "rows of the journal while it ran"},
		{"retries", retried, "serialization_retries: is 3"},
	} {
		res := scenario.Evaluate(New(), ov, out.Settings, tt.rec)
		found := false
		for _, f := range res.AllFindings() {
			found = found || strings.Contains(f.String(), tt.want)
		}
		if !found {
			t.Errorf("%s tampered: findings %v, want one saying %q", tt.name, res.AllFindings(), tt.want)
		}
	}
}

// TestPostgresMisbehavingRun runs the scenario on PostgreSQL, through the
// experiment's own suite (which starts its cluster), with runs that do
// their work and report nothing: every condition fails with the finding,
// the folder says pass: false and verify agrees (exit 4), and verify of
// the folder with a finding taken out exits 1.
func TestPostgresMisbehavingRun(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	const sec = `{"job_id":"job-1","items":3,"fail_at":2,"modes":["after_accept"],"trials":1,"latency_ms":{"validate":0,"transform":0,"send":0}}`
	// The suite starts its cluster in the test's temp dir, which the
	// testing package makes readable by its owner alone; the server runs
	// as the postgres user, who must reach its own folder in it.
	if err := os.Chmod(filepath.Dir(t.TempDir()), 0o711); err != nil {
		t.Fatal(err)
	}
	t.Setenv(worker.EnvBreak, "no-report")
	res := scenariotest.RunFailing(t, scenario.Registry{New()}, `{"batch": `+sec+`}`, map[string]string{backend.FlagBackend: store.BackendPostgres})
	for _, c := range Conditions {
		scenariotest.FailsWith(t, res, Name, ConditionName(AfterAccept, c), "trial 1 run 1: no report line on stdout")
	}
}
