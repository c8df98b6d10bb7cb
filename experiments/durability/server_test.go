package durability

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// pgSpec is the backend of the PostgreSQL tests: the server's defaults.
var pgSpec = backend.Spec{Name: store.BackendPostgres, Isolation: backend.DefaultIsolation, SynchronousCommit: backend.DefaultSynchronousCommit}

// TestServerPlanRefuses checks that what the PostgreSQL matrix cannot do
// is refused with the field or flag named and the reason, and that the
// server kind and synchronous_commit are refused on SQLite.
func TestServerPlanRefuses(t *testing.T) {
	tests := []struct {
		name      string
		spec      backend.Spec
		section   string
		overrides map[string]string
		want      string
	}{
		{"journal mode flag", pgSpec, ``, map[string]string{FlagJournalMode: "WAL"}, "--journal-mode: is SQLite's journal_mode"},
		{"synchronous field", pgSpec, `{"synchronous": ["FULL"]}`, nil, "durability.synchronous: is SQLite's synchronous pragma"},
		{"torn fault", pgSpec, ``, map[string]string{FlagFault: "torn"}, "--fault: is the power cut's fault mode"},
		{"fault seeds", pgSpec, `{"fault_seeds": 2}`, nil, "durability.fault_seeds: is the torn power cut's"},
		{"sync points without the power kind", pgSpec, ``, map[string]string{FlagSyncPoints: "true"}, "--sync-points: only with kind power on --backend postgres"},
		{"sync points field without the power kind", pgSpec, `{"sync_points": true}`, nil, "durability.sync_points: only with kind power on --backend postgres"},
		{"sync bound without sync points", pgSpec, ``, map[string]string{FlagKind: KindPower, FlagSyncBound: "3"}, "--sync-bound: only with durability.sync_points"},
		{"sync bound out of range", pgSpec, ``, map[string]string{FlagKind: KindPower, FlagSyncPoints: "true", FlagSyncBound: "0"}, "--sync-bound"},
		{"sync bound on SQLite", backend.SQLite, ``, map[string]string{FlagSyncBound: "3"}, "--sync-bound: is PostgreSQL's power cut's"},
		{"fsync without the power kind", pgSpec, ``, map[string]string{FlagFsync: "off"}, "--fsync: only with kind power"},
		{"wal_sync_method without the power kind", pgSpec, `{"wal_sync_method": "fsync"}`, nil, "durability.wal_sync_method: only with kind power"},
		{"unknown power model", pgSpec, ``, map[string]string{FlagKind: KindPower, FlagPowerModels: "keep"}, `--power-models: "keep" is not one of drop, torn`},
		{"unknown wal_sync_method", pgSpec, ``, map[string]string{FlagKind: KindPower, FlagWalSyncMethod: "sometimes"}, `--wal-sync-method: "sometimes" is not one of fdatasync`},
		{"full_page_writes on SQLite", backend.SQLite, ``, map[string]string{FlagFullPageWrites: "off"}, "--full-page-writes: is PostgreSQL's power cut's; it needs --backend postgres and kind power"},
		{"unknown pattern", pgSpec, `{"patterns": ["batch"]}`, nil, `durability.patterns: "batch" is not one of redelivery-separate, redelivery-single, batch-journal, claim-ttl`},
		{"pattern twice", pgSpec, ``, map[string]string{FlagPattern: "claim-ttl,claim-ttl"}, `--pattern: "claim-ttl" is listed twice`},
		{"unknown level", pgSpec, ``, map[string]string{FlagSynchronousCommits: "remote_apply"}, `--synchronous-commits: "remote_apply" is not one of on, local, off`},
		{"server kind on SQLite", backend.SQLite, ``, map[string]string{FlagKind: KindServer}, `--kind: "server" crashes the PostgreSQL server; it needs --backend postgres`},
		{"synchronous_commit on SQLite", backend.SQLite, `{"synchronous_commits": ["off"]}`, nil, "durability.synchronous_commits: is PostgreSQL's synchronous_commit; it needs --backend postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: tt.spec, Section: json.RawMessage(tt.section), Overrides: tt.overrides})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Plan(%s, %v) = %v, want an error containing %q", tt.section, tt.overrides, err, tt.want)
			}
		})
	}
}

// TestServerPlanConditions checks the PostgreSQL matrix: every pattern
// × on, local, off × kill, server by default, narrowed by
// --synchronous-commits and --kind, and the crash settings recorded only
// when a condition crashes the server.
func TestServerPlanConditions(t *testing.T) {
	names := func(ov map[string]string) ([]string, Settings) {
		t.Helper()
		p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: pgSpec, Overrides: ov})
		if err != nil {
			t.Fatal(err)
		}
		st := p.Settings().(Settings)
		var out []string
		for _, c := range st.Conditions {
			out = append(out, c.Name)
		}
		return out, st
	}
	all, st := names(nil)
	if len(all) != len(AllPatterns)*len(store.SynchronousCommit)*len(ServerKinds) {
		t.Errorf("default conditions %v", all)
	}
	for _, p := range AllPatterns {
		if !slices.Contains(all, ServerConditionName(p, "off", KindServer)) {
			t.Errorf("no condition %s among %v", ServerConditionName(p, "off", KindServer), all)
		}
	}
	if st.ServerSettings == nil || st.Isolation != "read committed" {
		t.Errorf("default settings %+v", st)
	}
	got, st := names(map[string]string{FlagSynchronousCommits: "off", FlagKind: KindKill, FlagPattern: PatternSeparate})
	if diff := cmp.Diff([]string{ServerConditionName(PatternSeparate, "off", KindKill)}, got); diff != "" || st.ServerSettings != nil {
		t.Errorf("narrowed conditions (-want +got):\n%s; server settings %v", diff, st.ServerSettings)
	}
}

// TestServerOracle pins the PostgreSQL model, written out by hand: a kill
// or a crash under on or local loses nothing; a crash under off takes
// back every commit of the first process, which after an ACK is lost
// ACKed work and after a crash point a rollback the redelivery redoes.
func TestServerOracle(t *testing.T) {
	cond := func(p, sc, k string) Condition {
		return Condition{Name: ServerConditionName(p, sc, k), Pattern: p, SynchronousCommit: sc, Kind: k}
	}
	tests := []struct {
		c     Condition
		point string
		want  Want
	}{
		{cond(PatternSeparate, "off", KindKill), PointACK, Want{Outcome: OutcomeOK}},
		{cond(PatternSeparate, "on", KindServer), PointACK, Want{Outcome: OutcomeOK}},
		{cond(PatternSeparate, "local", KindServer), wr.PointAfterJobCommit, Want{Outcome: TagDuplicate}},
		{cond(PatternSeparate, "off", KindServer), PointACK, Want{Outcome: TagLostAcked, RowsLost: 2}},
		{cond(PatternSeparate, "off", KindServer), wr.PointAfterJobCommit, Want{Outcome: TagRolledBack, RowsLost: 1}},
		{cond(PatternSeparate, "off", KindServer), wr.PointAfterJobInsert, Want{Outcome: OutcomeOK}},
		{cond(PatternSingle, "off", KindServer), PointACK, Want{Outcome: TagLostAcked, RowsLost: 2}},
		{cond(PatternSingle, "off", KindServer), wr.PointAfterCommit, Want{Outcome: TagRolledBack, RowsLost: 2}},
		{cond(PatternSingle, "on", KindServer), wr.PointAfterCommit, Want{Outcome: OutcomeOK}},
		// The batch journal, 2 items of 3 steps, each step marked
		// IN_FLIGHT then SUCCEEDED: a crash under off takes back every
		// mark, so the resume sends again each item sent, and the
		// receiver, given no Idempotency-Key, accepts it again.
		{cond(PatternBatch, "off", KindServer), PointACK, Want{Outcome: "lost-acked+duplicate", RowsLost: 6}},
		{cond(PatternBatch, "off", KindServer), "after-send-accepted:item-001", Want{Outcome: "rolled-back+duplicate", RowsLost: 3}},
		{cond(PatternBatch, "off", KindServer), "before-send:item-002", Want{Outcome: "rolled-back+duplicate", RowsLost: 6}},
		{cond(PatternBatch, "off", KindServer), "before-send:item-001", Want{Outcome: TagRolledBack, RowsLost: 3}},
		{cond(PatternBatch, "on", KindServer), "after-send-accepted:item-002", Want{Outcome: OutcomeOK}},
		{cond(PatternBatch, "off", KindKill), PointACK, Want{Outcome: OutcomeOK}},
		// The TTL claim: a claim row taken back lets the probe win inside
		// the TTL, a second winner.
		{cond(PatternClaim, "off", KindServer), "claimed", Want{Outcome: "rolled-back+lost-claim+duplicate", RowsLost: 1}},
		{cond(PatternClaim, "off", KindServer), PointACK, Want{Outcome: "lost-acked+lost-claim+lost-downstream+duplicate", RowsLost: 1}},
		{cond(PatternClaim, "off", KindServer), "schema-ready", Want{Outcome: OutcomeOK}},
		{cond(PatternClaim, "local", KindServer), "followed-up", Want{Outcome: OutcomeOK}},
	}
	for _, tt := range tests {
		tt.want.Recovered = []string{}
		got, err := Settings{Items: 2}.wantOf(tt.c, tt.point)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.c.Name, tt.point, diff)
		}
	}
}

// TestPostgresServerCrash runs the server kind of both redelivery
// patterns under synchronous_commit on, local and off on a real
// throwaway cluster, with real workers, and reaches the verdict as verify
// does. The oracle passes it; told that off loses nothing, it fails
// exactly the off conditions; and tampered records give findings.
func TestPostgresServerCrash(t *testing.T) {
	if _, err := backend.FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	ov := map[string]string{FlagKind: KindServer, FlagPattern: PatternSeparate + "," + PatternSingle}
	out := runOnServer(t, ov)
	if len(out.Findings) > 0 {
		t.Fatalf("findings: %v", out.Findings)
	}
	lostAcked := 0
	for _, c := range out.Result.Conditions {
		if !c.Pass {
			t.Errorf("%s: %+v", c.Name, c.Differences)
		}
		var obs map[string]Trial
		if err := json.Unmarshal(c.Observed, &obs); err != nil {
			t.Fatal(err)
		}
		if o := obs[PointACK]; o.Outcome == TagLostAcked && len(o.Lost) > 0 {
			lostAcked++
		}
	}
	// The oracle, not this test, says which; this only makes sure the run
	// exercised a loss at all.
	if lostAcked == 0 {
		t.Error("no condition lost ACKed rows")
	}
	sec, err := New().Report(out.Result)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sec.Tables, func(tb scenario.Table) bool {
		return strings.HasPrefix(tb.Title, "server crashes") && len(tb.Rows) == 4*len(out.Result.Conditions)
	}) {
		t.Errorf("no table of the server crashes' lost rows with every trial: %+v", sec.Tables)
	}

	t.Run("oracle told off loses nothing fails", func(t *testing.T) {
		res := scenario.Evaluate(scenario.Define[Settings, Extra](offKeeps{}), ov, out.Settings, out.Records)
		if fs := res.AllFindings(); len(fs) > 0 {
			t.Fatalf("findings: %v", fs)
		}
		for _, c := range res.Conditions {
			if off := strings.Contains(c.Name, "/off/"); c.Pass == off {
				t.Errorf("%s: pass %v", c.Name, c.Pass)
			}
		}
	})
	// Line 0 is separate-commit under on, its normal run, processes 0
	// (first) and 1 (redelivery); line 8 is separate-commit under off,
	// its normal run, whose crash lost both rows.
	tampers := []struct {
		name   string
		obs    bool
		index  int
		edit   func(m map[string]any)
		inText string
	}{
		{"lost rows dropped", true, 8, func(m map[string]any) { m["server"].(map[string]any)["lost_rows"] = map[string]any{} }, "server.lost_rows"},
		{"writers not frozen", true, 0, func(m map[string]any) { m["server"].(map[string]any)["writers_frozen"] = false }, "writers_frozen"},
		{"crash settings read back", true, 0, func(m map[string]any) {
			m["server"].(map[string]any)["settings"].(map[string]any)["wal_writer_delay"] = "200ms"
		}, "server.settings"},
		{"server record dropped", true, 0, func(m map[string]any) { delete(m, "server") }, "server"},
		{"rows after the crash restored", true, 8, func(m map[string]any) { m["after"] = m["before"] }, "server.lost_rows"},
		{"synchronous_commit read back", false, 0, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"synchronous_commit":"on"`, `"synchronous_commit":"off"`, 1)
		}, "synchronous_commit"},
		{"redelivery's claim", false, 1, func(m map[string]any) {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"already_processed":true`, `"already_processed":false`, 1)
		}, "already_processed"},
		{"crash kind", false, 2, func(m map[string]any) { m["env"].(map[string]any)[protocol.EnvCrashKind] = KindServer }, "env"},
	}
	for _, tt := range tampers {
		t.Run("tamper "+tt.name, func(t *testing.T) {
			rec := scenariotest.Edit(t, out.Records, tt.obs, tt.index, tt.edit)
			res := scenario.Evaluate(New(), ov, out.Settings, rec)
			if res.Pass {
				t.Error("the tampered records pass")
			}
			for _, f := range res.AllFindings() {
				if strings.Contains(f.String(), tt.inText) {
					return
				}
			}
			t.Errorf("no finding mentioning %q; got %v", tt.inText, res.AllFindings())
		})
	}
}

// offKeeps is the PostgreSQL matrix with a wrong oracle: a crash under
// synchronous_commit off keeps what it keeps under on.
type offKeeps struct{ Scenario }

func (offKeeps) Expect(st Settings) ([]scenario.Expected, error) {
	st.Conditions = slices.Clone(st.Conditions)
	for i, c := range st.Conditions {
		if c.SynchronousCommit == "off" {
			st.Conditions[i].SynchronousCommit = "on"
		}
	}
	// The conditions keep their names: only the oracle's view changes.
	return Scenario{}.Expect(st)
}

// runOnServer runs the PostgreSQL matrix with overrides ov on a throwaway
// cluster and evaluates the records.
func runOnServer(tb testing.TB, ov map[string]string) scenariotest.Outcome {
	tb.Helper()
	srv, err := backend.Start(context.Background(), pgSpec, backend.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Close()
	return scenariotest.RunOn(tb, New(), pgSpec, srv, "", ov)
}
