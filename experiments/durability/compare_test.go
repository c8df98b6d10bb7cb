package durability

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// comparedOf runs the registered scenario's Compare, as the report does,
// over hand-made trials by condition name.
func comparedOf(tb testing.TB, st Settings, observed map[string]map[string]Trial) scenario.Compared {
	tb.Helper()
	raw := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	res := results.ScenarioResult{Name: Name, Settings: raw(st)}
	for _, c := range st.Conditions {
		if o, ok := observed[c.Name]; ok {
			res.Conditions = append(res.Conditions, results.ConditionResult{Name: c.Name, Pass: true, Observed: raw(o)})
		}
	}
	got, err := New().Compare(res)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

func ok(exit int) Trial { return Trial{Outcome: OutcomeOK, FirstExit: exit, Integrity: "ok"} }

// TestCompareLinesUpCrashes: SQLite's power cut and PostgreSQL's server
// crash of one pattern share a row, and so do the two kills, each
// condition under its setting; the words say the loss per point.
func TestCompareLinesUpCrashes(t *testing.T) {
	sq, err := settingsOf(backend.SQLite, Input{Patterns: []string{PatternSeparate}, JournalModes: []string{"WAL"}, Synchronous: []string{"NORMAL", "FULL"}}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := settingsOf(backend.Spec{Name: "postgres"}, Input{Patterns: []string{PatternSeparate}, SynchronousCommits: []string{"on", "off"}}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	pgCond := func(kind, level string) string {
		for _, c := range pg.Conditions {
			if c.Kind == kind && c.SynchronousCommit == level {
				return c.Name
			}
		}
		t.Fatalf("no PostgreSQL condition of kind %s under synchronous_commit=%s in %+v", kind, level, pg.Conditions)
		return ""
	}
	crashed := protocol.ExitCrash
	lostACK := Trial{Outcome: TagLostAcked, RowsLost: 2, Integrity: "ok"}
	redone := Trial{Outcome: TagRolledBack, FirstExit: crashed, RowsLost: 1, Integrity: "ok"}
	twice := Trial{Outcome: TagDuplicate, FirstExit: crashed, Integrity: "ok"}
	gotSQ := comparedOf(t, sq, map[string]map[string]Trial{
		ConditionName(PatternSeparate, "WAL", "NORMAL", KindPower): {PointACK: ok(0), PointACKOpen: lostACK, PointACKReader: lostACK, wr.PointAfterJobCommit: redone},
		ConditionName(PatternSeparate, "WAL", "FULL", KindKill):    {PointACK: ok(0), wr.PointAfterJobInsert: ok(crashed), wr.PointAfterJobCommit: twice},
	})
	gotPG := comparedOf(t, pg, map[string]map[string]Trial{
		pgCond(KindKill, "on"):    {PointACK: ok(0), wr.PointAfterJobCommit: twice},
		pgCond(KindServer, "on"):  {PointACK: ok(0)},
		pgCond(KindServer, "off"): {PointACK: lostACK, wr.PointAfterProcessedCommit: redone, wr.PointAfterJobCommit: redone},
	})
	for _, tc := range []struct {
		got  scenario.Compared
		cond string
		want scenario.Row
		says string
	}{
		{gotSQ, ConditionName(PatternSeparate, "WAL", "NORMAL", KindPower), scenario.Row{Key: PatternSeparate + "/" + rowCrash, Setting: "WAL/NORMAL"},
			"redone after rollback at after-job-commit; lost 2 ACKed rows at ack-open, ack-reader (4 trials)"},
		{gotSQ, ConditionName(PatternSeparate, "WAL", "FULL", KindKill), scenario.Row{Key: PatternSeparate + "/kill", Setting: "WAL/FULL"},
			"no loss; done twice at after-job-commit (3 trials)"},
		{gotPG, pgCond(KindKill, "on"), scenario.Row{Key: PatternSeparate + "/kill", Setting: "synchronous_commit=on"},
			"no loss; done twice at after-job-commit (2 trials)"},
		{gotPG, pgCond(KindServer, "on"), scenario.Row{Key: PatternSeparate + "/" + rowCrash, Setting: "synchronous_commit=on"},
			"no loss in 1 trial"},
		{gotPG, pgCond(KindServer, "off"), scenario.Row{Key: PatternSeparate + "/" + rowCrash, Setting: "synchronous_commit=off"},
			"lost 2 ACKed rows at ack; redone after rollback at after-job-commit, after-processed-commit (3 trials)"},
	} {
		if r := tc.got.RowOf(tc.cond); r != tc.want {
			t.Errorf("%s: row %+v, want %+v", tc.cond, r, tc.want)
		}
		if w := tc.got.Outcomes[tc.cond]; w != tc.says {
			t.Errorf("%s: %q, want %q", tc.cond, w, tc.says)
		}
	}
}

// TestTrialWords: outcomes are grouped by outcome and, for a loss, by the
// rows each trial lost; combined tags are said together; a torn trial's
// seed is left out of its point.
func TestTrialWords(t *testing.T) {
	order := []string{PointACK, "p1", "p2"}
	for _, tc := range []struct {
		name   string
		trials map[string]Trial
		want   string
	}{
		{"all ok", map[string]Trial{PointACK: ok(0), "p1": ok(17)}, "no loss in 2 trials"},
		{"losses differ", map[string]Trial{PointACK: {Outcome: TagLostAcked, RowsLost: 1}, "p1": {Outcome: TagLostAcked, RowsLost: 3}, "p2": {Outcome: TagLostAcked, RowsLost: 1}},
			"lost 1 ACKed row at ack, p2; lost 3 ACKed rows at p1 (3 trials)"},
		{"combined", map[string]Trial{"p2": {Outcome: TagLostAcked + "+" + TagDuplicate, RowsLost: 2}, "zz": {Outcome: TagCorrupt}},
			"lost 2 ACKed rows + done twice at p2; corrupt at zz (2 trials)"},
		{"downstream is a loss", map[string]Trial{"p1": {Outcome: TagLostDownstream}}, "downstream fields lost at p1 (1 trial)"},
		{"torn seeds", map[string]Trial{"p1#0": {Outcome: TagMissing}, "p1#1": {Outcome: TagMissing}, PointACK + "#0": ok(0)},
			"no loss; work missing at p1 (3 trials)"},
	} {
		if got := trialWords(tc.trials, order); got != tc.want {
			t.Errorf("%s: %s", tc.name, cmp.Diff(tc.want, got))
		}
	}
}
