package redelivery

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// TestMain builds the idemlab-nats binary for the broker's tests, in the
// test process only: a re-executed worker dispatches before Run.
func TestMain(m *testing.M) { worker.TestMain(withBroker{m}, breaks) }

type withBroker struct{ m *testing.M }

func (w withBroker) Run() int { return brokertest.Main(w.m) }

const section = `{"event_id": "agent-run-042:completed", "job_key": "review-agent-run-042"}`

var settings = Settings{EventID: "agent-run-042:completed", JobKey: "review-agent-run-042", Deliveries: 2, Conditions: Conditions(), SQLite: wr.RequestedSQLite()}

// counts is a hand-made observation: rows and exit code only.
type counts struct{ Exit, Jobs, Processed int }

func pick(ds []Delivery) []counts {
	var out []counts
	for _, d := range ds {
		out = append(out, counts{d.ExitCode, d.FollowUpJobs, d.ProcessedEvents})
	}
	return out
}

// TestExpect checks the oracle against rows written out by hand from the
// transaction semantics, including points the article did not crash at.
func TestExpect(t *testing.T) {
	tests := []struct {
		pattern wr.Pattern
		crashAt string
		want    []counts
	}{
		{wr.SeparateCommit, "", []counts{{0, 1, 1}, {0, 1, 1}}},
		{wr.SeparateCommit, wr.PointAfterJobInsert, []counts{{17, 0, 0}, {0, 1, 1}}},
		{wr.SeparateCommit, wr.PointAfterJobCommit, []counts{{17, 1, 0}, {0, 2, 1}}},
		{wr.SeparateCommit, wr.PointAfterProcessedCommit, []counts{{17, 1, 1}, {0, 1, 1}}},
		{wr.SingleTransaction, "", []counts{{0, 1, 1}, {0, 1, 1}}},
		{wr.SingleTransaction, wr.PointAfterProcessedInsert, []counts{{17, 0, 0}, {0, 1, 1}}},
		{wr.SingleTransaction, wr.PointBeforeCommit, []counts{{17, 0, 0}, {0, 1, 1}}},
		{wr.SingleTransaction, wr.PointAfterCommit, []counts{{17, 1, 1}, {0, 1, 1}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.pattern)+"/"+tt.crashAt, func(t *testing.T) {
			got := Expect(settings, Condition{Pattern: tt.pattern, CrashAt: tt.crashAt})
			if diff := cmp.Diff(tt.want, pick(got)); diff != "" {
				t.Errorf("Expect (-want +got):\n%s", diff)
			}
			if tt.crashAt != "" && got[0].CrashedAt != tt.crashAt {
				t.Errorf("crashed_at %q, want %q", got[0].CrashedAt, tt.crashAt)
			}
		})
	}
}

func TestPlanRefusesBadInput(t *testing.T) {
	tests := []struct{ section, want string }{
		{`{"event_id": "", "job_key": "k"}`, "redelivery.event_id: must not be empty"},
		{`{"event_id": "e", "job_key": " "}`, "redelivery.job_key: must not be empty"},
		{`{"event_id": "e", "job_key": "k", "jobkey": "x"}`, "redelivery.jobkey: unknown field"},
		{`{"event_id": 3, "job_key": "k"}`, "redelivery.event_id: got JSON number"},
		{``, "redelivery: section is missing"},
	}
	for _, tt := range tests {
		_, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(tt.section)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%s) = %v, want an error containing %q", tt.section, err, tt.want)
		}
	}
}

// run runs the scenario once with real processes; the records are reused
// by the tamper table.
func run(t *testing.T) scenariotest.Outcome {
	t.Helper()
	out := scenariotest.Run(t, New(), section, nil)
	if len(out.Findings) > 0 {
		t.Fatalf("a fresh run has findings: %v", out.Findings)
	}
	return out
}

// TestRunRealProcesses runs the article's conditions through real child
// processes and real files, and reaches the verdict through Evaluate.
func TestRunRealProcesses(t *testing.T) {
	out := run(t)
	if !out.Result.Pass {
		t.Fatalf("run failed: %+v", out.Result.Conditions)
	}
	if n := len(out.Records.Processes); n != 2*len(Conditions()) {
		t.Fatalf("%d processes, want %d", n, 2*len(Conditions()))
	}
	var obs []Delivery
	for _, c := range out.Result.Conditions {
		if c.Name == "separate-commit/crash-after-job-commit" {
			json.Unmarshal(c.Observed, &obs)
		}
	}
	if len(obs) != 2 || obs[1].FollowUpJobs != 2 {
		t.Errorf("separate commits crashed after the job's commit gave %+v, want 2 jobs after the redelivery", obs)
	}
	var extra Extra
	if err := json.Unmarshal(out.Result.Extra, &extra); err != nil || extra.SQLiteReadBack != wr.RequestedSQLite() {
		t.Errorf("read back %+v (%v), want %+v", extra.SQLiteReadBack, err, wr.RequestedSQLite())
	}
}

// TestEveryPointRealProcesses crashes real workers at every point the
// workers report, so no point is listed by hand.
func TestEveryPointRealProcesses(t *testing.T) {
	everyPoint(t, settings, nil)
}

// TestPostgresEveryPoint is the same on a throwaway PostgreSQL cluster,
// under each isolation level: the worker's crash is a process exit, and
// the oracle is the one SQLite's run is judged by.
func TestPostgresEveryPoint(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	for _, iso := range store.Isolations {
		t.Run(iso.String(), func(t *testing.T) {
			spec := backend.Spec{Name: store.BackendPostgres, Isolation: iso.String(), SynchronousCommit: "on"}
			srv, err := backend.Start(context.Background(), spec, backend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: spec, Section: json.RawMessage(section)})
			if err != nil {
				t.Fatal(err)
			}
			everyPoint(t, p.Settings().(Settings), srv)
		})
	}
}

// everyPoint discovers each pattern's points from a probe delivery, runs
// a condition per point on the backend (srv nil: SQLite), and checks that
// the records give no finding and every condition passes.
func everyPoint(t *testing.T, base Settings, srv *backend.Server) {
	t.Helper()
	env := harnesstest.New(t)
	probeEnv := scenario.Env{TempDir: t.TempDir(), Backend: srv}
	var conds []Condition
	for _, p := range wr.Patterns {
		db, err := probeEnv.Fresh(context.Background(), "probe-", DBName)
		if err != nil {
			t.Fatal(err)
		}
		probe, err := env.Runner.Run(context.Background(), harness.Spec{
			Scenario: Name, Condition: "probe", Worker: wr.WorkerName,
			Args: base.Args(Condition{Pattern: p}, db.Target).Argv(),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, point := range probe.Report.Points {
			conds = append(conds, Condition{Name: string(p) + "/" + point, Pattern: p, CrashAt: point})
		}
	}
	if len(conds) < 6 {
		t.Fatalf("discovered %d points, want at least 6", len(conds))
	}
	st := base
	st.Conditions = conds
	p := &plan{s: st}
	env2 := harnesstest.New(t)
	if err := p.Run(context.Background(), scenario.Env{Runner: env2.Runner, Recorder: env2.Recorder, TempDir: t.TempDir(), Backend: srv}); err != nil {
		t.Fatal(err)
	}
	env2.Recorder.Close()
	f, err := results.LoadRecords(env2.Dir, results.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res := scenario.Evaluate(New(), nil, scenario.Marshal(st), f.Records(Name))
	findings := res.AllFindings()
	if len(findings) > 0 {
		t.Fatalf("findings: %v", findings)
	}
	for _, c := range res.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
	}
}

// hopeful is the scenario with an oracle that expects what one might
// naively hope for: no duplicate job after a crash between the commits.
type hopeful struct{ Scenario }

func (hopeful) Expect(st Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, c := range st.Conditions {
		d := Expect(st, c)
		if c.CrashAt == wr.PointAfterJobCommit {
			d[1].FollowUpJobs = 1
		}
		out = append(out, scenario.Expected{Condition: c.Name, Value: d})
	}
	return out, nil
}

// TestWrongOracleFails shows that an expectation that does not hold turns
// into pass: false naming the field.
func TestWrongOracleFails(t *testing.T) {
	out := run(t)
	res := scenario.Evaluate(scenario.Define[Settings, Extra](hopeful{}), nil, out.Settings, out.Records)
	findings := res.AllFindings()
	if len(findings) > 0 {
		t.Fatalf("findings: %v", findings)
	}
	if res.Pass {
		t.Fatal("a wrong oracle passed")
	}
	for _, c := range res.Conditions {
		failing := c.Name == "separate-commit/crash-after-job-commit"
		if c.Pass == failing {
			t.Errorf("%s: pass %v", c.Name, c.Pass)
		}
		if failing && (len(c.Differences) != 1 || c.Differences[0].Path != "[1].follow_up_jobs") {
			t.Errorf("differences %+v, want one at [1].follow_up_jobs", c.Differences)
		}
	}
}

// TestFoldCatchesTampering edits one field of one line at a time; each
// edit must give a finding that names the file and the field.
func TestFoldCatchesTampering(t *testing.T) {
	out := run(t)
	// Line 3 and process 3 are separate-commit/crash-after-job-commit,
	// delivery 1, which crashed; line 4 is its redelivery.
	tests := []struct {
		name   string
		obs    bool
		index  int
		edit   func(m map[string]any)
		file   string
		inText string
	}{
		{"job row's event id", true, 3, func(m map[string]any) {
			m["rows"].(map[string]any)["follow_up_jobs"].([]any)[0].(map[string]any)["event_id"] = "other-event"
		}, "observations.jsonl", "rows.follow_up_jobs[0]"},
		{"processed row's id", true, 1, func(m map[string]any) { m["rows"].(map[string]any)["processed_events"] = []any{"x"} }, "observations.jsonl", "rows.processed_events[0]"},
		{"a job row added", true, 0, func(m map[string]any) {
			r := m["rows"].(map[string]any)
			r["follow_up_jobs"] = append(r["follow_up_jobs"].([]any), r["follow_up_jobs"].([]any)[0])
		}, "raw-processes.jsonl", "job_inserted"},
		{"delivery number", true, 3, func(m map[string]any) { m["delivery"] = 3.0 }, "observations.jsonl", "delivery"},
		{"database path", true, 3, func(m map[string]any) { m["db"] = "/elsewhere/events.sqlite3" }, "observations.jsonl", "db"},
		{"process id", true, 3, func(m map[string]any) { m["process_id"] = 3.0 }, "raw-processes.jsonl", "no observation refers"},
		{"condition name", true, 0, func(m map[string]any) { m["condition"] = "separate-commit/nope" }, "observations.jsonl", "condition"},
		{"argv pattern", false, 2, func(m map[string]any) { m["argv"].([]any)[6] = "single-transaction" }, "raw-processes.jsonl", "argv"},
		{"argv event id", false, 0, func(m map[string]any) { m["argv"].([]any)[8] = "other" }, "raw-processes.jsonl", "argv"},
		{"worker name", false, 0, func(m map[string]any) { m["worker"] = "claim.race" }, "raw-processes.jsonl", "worker"},
		{"crash point env", false, 2, func(m map[string]any) { m["env"] = map[string]any{protocol.EnvCrashAt: wr.PointAfterJobInsert} }, "raw-processes.jsonl", "env"},
		{"crash env removed", false, 2, func(m map[string]any) { m["env"] = map[string]any{} }, "raw-processes.jsonl", "exit_code"},
		{"exit code", false, 3, func(m map[string]any) { m["exit_code"] = 3.0 }, "raw-processes.jsonl", "exit_code"},
		{"points passed", false, 0, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"points":["after-job-insert",`, `"points":[`, 1)
		}, "", ""},
		{"crashed_at", false, 2, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"crashed_at":"after-job-commit"`, `"crashed_at":"after-job-insert"`, 1)
		}, "raw-processes.jsonl", "exit_code"},
		{"pragma read back", false, 0, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"synchronous":"FULL"`, `"synchronous":"NORMAL"`, 1)
		}, "raw-processes.jsonl", "read back"},
		{"job_inserted claim", false, 1, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"job_inserted":false`, `"job_inserted":true`, 1)
		}, "raw-processes.jsonl", "job_inserted"},
		{"report dropped", false, 1, func(m map[string]any) { m["stdout"] = "" }, "raw-processes.jsonl", "stdout"},
		{"process killed by a signal", false, 1, func(m map[string]any) { m["signal"] = "killed"; m["exit_code"] = -1.0 }, "raw-processes.jsonl", "exit_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, out.Records, tt.obs, tt.index, tt.edit)
			res := scenario.Evaluate(New(), nil, out.Settings, rec)
			findings := res.AllFindings()
			if tt.file == "" {
				// The points are the worker's word, checked by the oracle:
				// the edit must fail the condition instead.
				if res.Pass {
					t.Fatalf("edit passed unnoticed")
				}
				return
			}
			for _, f := range findings {
				if f.File == tt.file && strings.Contains(f.String(), tt.inText) {
					return
				}
			}
			t.Errorf("no finding in %s mentioning %q; got %v", tt.file, tt.inText, findings)
		})
	}
	// An extra process line no observation uses.
	extra := out.Records.Processes[0]
	extra.ID, extra.N = 99, 99
	rec := results.NewRecords(out.Records.Observations, append(append([]results.Process{}, out.Records.Processes...), extra))
	if findings := scenario.Evaluate(New(), nil, out.Settings, rec).AllFindings(); len(findings) == 0 || !strings.Contains(findings[len(findings)-1].String(), "no observation refers") {
		t.Errorf("an unreferenced process line gave %v", findings)
	}
}
