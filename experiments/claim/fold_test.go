package claim

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// smallInput is a valid claim section for tests.
func smallInput(workers, reps int) Input {
	return Input{Fingerprint: "svc:error:timeout", Source: "svc", Level: "error", Message: "timeout",
		Classification: "needs-triage", TTLSeconds: 60, Workers: workers, Repetitions: reps,
		MutantRepetitions: 1, BusyTimeoutMS: 5000}
}

// hist is a hand-made history: the observation lines, the members'
// transcripts and their process lines, before encoding, so a test can
// change one field.
type hist struct {
	st      Settings
	obs     []Observation
	members []wc.PoolResult
	procs   []results.ProcessRecord
}

// history builds a clean history for st without processes: every racer's
// claim runs in-process with the worker's own Claim on a real file, in
// slot order, with a made-up clock that moves 10 ms per race.
func history(tb testing.TB, st Settings) *hist {
	tb.Helper()
	ctx := context.Background()
	h := &hist{st: st}
	for i := 0; i < st.PoolSize; i++ {
		h.members = append(h.members, wc.PoolResult{Label: MemberLabel(i), Races: []wc.Entry{}})
	}
	ttl := time.Duration(st.TTLMS) * time.Millisecond
	clock := int64(1_700_000_000_000)
	var path string
	var base int64
	var db *sql.DB
	for _, s := range Schedule(st) {
		if s.Index == 0 {
			if db != nil {
				db.Close()
			}
			path = filepath.Join(tb.TempDir(), DBName)
			var err error
			if db, _, err = sqlitedb.Open(ctx, wc.Options(path, 5*time.Second)); err != nil {
				tb.Fatal(err)
			}
			if err := wc.CreateSchema(ctx, db, s.Round.Schema); err != nil {
				tb.Fatal(err)
			}
			base = clock
		}
		clock += 10
		start := clock
		if s.Race.Pinned {
			start = base
		}
		released := clock*1000 + 500
		o := Observation{Scenario: Name, Condition: s.Condition, Race: s.Seq, Round: s.Round.ID, Variant: s.By,
			Repetition: s.Repetition, RaceName: s.Race.Name, DB: path, BaseMS: base, StartMS: start,
			ReleasedAtUS: released, ReadAtUS: released + 2000}
		for k, m := range Members(s.Seq, s.Racers, st.PoolSize) {
			req := RequestFor(s, k, path, start, base)
			now := req.NowMS
			if now == wc.NoPin {
				now = clock + req.ClockOffsetMS
			}
			ev := wc.Event{Fingerprint: st.Fingerprint, Source: st.Source, Level: st.Level, Message: st.Message, Time: req.EventMS}
			out, claimErr := claimAs(tb, db, st, req.Variant, ev, now, ttl)
			e := wc.Entry{Request: req, SQLite: st.SQLite, ReadyAtUS: released - 100, ReleasedAtUS: released + 10, Outcome: out, ClaimError: claimErr}
			if out.Won && req.FollowUp {
				e.ExternalID, e.FollowedUp = wc.ExternalIDFor(req.Label), true
				if _, err := wc.FollowUp(ctx, db, st.Fingerprint, st.Classification, e.ExternalID); err != nil {
					tb.Fatal(err)
				}
			}
			h.members[m].Races = append(h.members[m].Races, e)
			o.Racers = append(o.Racers, Racer{Slot: k, ProcessID: m + 1, Request: req})
		}
		row, ok, err := wc.ReadRow(ctx, store.SQLiteDB(db), st.Fingerprint)
		if err != nil {
			tb.Fatal(err)
		}
		o.ClaimedAtColumn = row.HasClaimedAt
		if ok {
			o.Row = &row
		}
		h.obs = append(h.obs, o)
	}
	if db != nil {
		db.Close()
	}
	for i := range h.members {
		h.procs = append(h.procs, results.ProcessRecord{
			ID: i + 1, Scenario: Name, Condition: PoolCondition, Label: MemberLabel(i), Worker: wc.PoolWorker,
			Argv: append([]string{"idemlab", "worker", wc.PoolWorker}, st.PoolArgs(MemberLabel(i)).Argv()...),
			Env:  map[string]string{}, PID: 100 + i,
			// A window of one second each: every scenario's process
			// windows are checked.
			StartedAt: "2026-01-01T00:00:00Z", EndedAt: "2026-01-01T00:00:01Z", DurationMS: 1000,
		})
	}
	return h
}

// claimAs makes one claim as a pool member would: the user's statement's
// error is its result, any other is the test's.
func claimAs(tb testing.TB, db *sql.DB, st Settings, v wc.Variant, ev wc.Event, now int64, ttl time.Duration) (wc.Outcome, string) {
	tb.Helper()
	ctx := context.Background()
	if v == wc.User {
		out, err := wc.ClaimUser(ctx, db, wc.Statements{Claim: st.User.claimSQL(), Fallback: st.User.fallbackSQL()}, ev, now, ttl)
		if err != nil {
			return out, err.Error()
		}
		return out, ""
	}
	out, err := wc.Claim(ctx, db, v, ev, now, ttl)
	if err != nil {
		tb.Fatalf("claim %s: %v", v, err)
	}
	return out, ""
}

// records encodes the history as the loader would hand it to the fold.
func (h *hist) records(tb testing.TB) results.Records {
	tb.Helper()
	var lines []results.Line
	for i, o := range h.obs {
		lines = append(lines, results.Line{N: i + 1, Scenario: o.Scenario, Condition: o.Condition, Raw: mustJSON(tb, o)})
	}
	var procs []results.Process
	for i, p := range h.procs {
		if p.Stdout == "" && i < len(h.members) {
			rep := protocol.Report{Worker: wc.PoolWorker, Points: []string{}, Result: mustJSON(tb, h.members[i])}
			p.Stdout = string(mustJSON(tb, rep)) + "\n"
		}
		procs = append(procs, results.Process{N: i + 1, ProcessRecord: p})
	}
	return results.NewRecords(lines, procs)
}

// entry is the transcript entry of the racer in a slot of observation i.
func (h *hist) entry(tb testing.TB, i, slot int) *wc.Entry {
	tb.Helper()
	o := h.obs[i]
	m := &h.members[o.Racers[slot].ProcessID-1]
	for j := range m.Races {
		if m.Races[j].Request.Race == o.Race {
			return &m.Races[j]
		}
	}
	tb.Fatalf("no entry for race %d slot %d", o.Race, slot)
	return nil
}

// find is the index of a race's observation in the first repetition.
func (h *hist) find(tb testing.TB, cond, race string) int {
	tb.Helper()
	for i, o := range h.obs {
		if o.Condition == cond && o.RaceName == race && o.Repetition == 1 {
			return i
		}
	}
	tb.Fatalf("no race %s of %s", race, cond)
	return -1
}

func mustJSON(tb testing.TB, v any) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func fold(tb testing.TB, st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	tb.Helper()
	return New().Fold(scenario.Marshal(st), rec)
}

// TestFoldCleanHistory folds a clean history, mutants included, and gets
// exactly the oracle's figures with no finding.
func TestFoldCleanHistory(t *testing.T) {
	st := Derive(smallInput(3, 2), true)
	h := history(t, st)
	folded, findings := fold(t, st, h.records(t))
	for _, f := range findings {
		t.Errorf("finding: %s", f)
	}
	exp, err := New().Expect(scenario.Marshal(st))
	if err != nil {
		t.Fatal(err)
	}
	if len(folded.Observed) != len(exp) {
		t.Errorf("%d conditions observed, the oracle gives %d", len(folded.Observed), len(exp))
	}
	for _, e := range exp {
		if d := cmp.Diff(scenario.Marshal(e.Value), scenario.Marshal(folded.Observed[e.Condition])); d != "" {
			t.Errorf("%s (-oracle +fold):\n%s", e.Condition, d)
		}
	}
	ex := folded.Extra.(Extra)
	if ex.Mutants == nil || len(ex.Mutants.Rows) != len(wc.Mutants) {
		t.Fatalf("mutant table %+v", ex.Mutants)
	}
	killer := map[wc.Variant]string{
		wc.MutantDoNothing: "3-after-ttl", wc.MutantNoWhere: "2-within-ttl", wc.MutantNullExcluded: "4-null-claimed-at",
		wc.MutantBoundaryFlipped: "5-at-boundary", wc.MutantCallerTime: "6-forged-future",
	}
	for _, r := range ex.Mutants.Rows {
		if !r.Killed || !strings.Contains(strings.Join(r.KilledBy, ","), killer[r.Mutant]) {
			t.Errorf("%s killed by %v, want %s among them", r.Mutant, r.KilledBy, killer[r.Mutant])
		}
	}
}

// TestFoldTampered changes one field of a clean history at a time; each
// change must give a finding that names the file and the field.
func TestFoldTampered(t *testing.T) {
	st := Derive(smallInput(2, 1), false)
	tests := []struct {
		name  string
		file  string
		field string
		edit  func(tb testing.TB, h *hist)
	}{
		{"member echoes another variant", results.ProcessesFile, "request.variant", func(tb testing.TB, h *hist) {
			h.entry(tb, h.find(tb, "3-after-ttl/ttl", "B"), 0).Request.Variant = wc.MutantNoWhere
		}},
		{"parent sent another variant", results.ObservationsFile, "racers[0].request.variant", func(tb testing.TB, h *hist) {
			h.obs[h.find(tb, "2-within-ttl/ttl", "B")].Racers[0].Request.Variant = wc.Legacy
		}},
		{"winner claim swapped, row names the other", results.ObservationsFile, "row.external_id", func(tb testing.TB, h *hist) {
			i := h.find(tb, "1-fresh/ttl", "A")
			a, b := h.entry(tb, i, 0), h.entry(tb, i, 1)
			if !a.Outcome.Won {
				a, b = b, a
			}
			a.Outcome.Won, a.Outcome.Changes, a.FollowedUp, a.ExternalID = false, 0, false, ""
			b.Outcome.Won, b.Outcome.Changes, b.FollowedUp, b.ExternalID = true, 1, true, wc.ExternalIDFor(b.Request.Label)
		}},
		{"racer's report dropped", results.ProcessesFile, "stdout", func(tb testing.TB, h *hist) {
			i := h.find(tb, "3-after-ttl/legacy", "B")
			m := &h.members[h.obs[i].Racers[1].ProcessID-1]
			for j, e := range m.Races {
				if e.Request.Race == h.obs[i].Race {
					m.Races = append(m.Races[:j], m.Races[j+1:]...)
					return
				}
			}
		}},
		{"row classification changed by a re-claim", results.ObservationsFile, "row.classification", func(tb testing.TB, h *hist) {
			other := "other"
			h.obs[h.find(tb, "8-reclaim-keeps-downstream/ttl", "B")].Row.Classification = &other
		}},
		{"clock offset", results.ObservationsFile, "request.clock_offset_ms", func(tb testing.TB, h *hist) {
			h.obs[h.find(tb, "3-after-ttl/ttl", "B")].Racers[1].Request.ClockOffsetMS++
		}},
		{"pinned now", results.ObservationsFile, "request.now_ms", func(tb testing.TB, h *hist) {
			h.obs[h.find(tb, "5-at-boundary/ttl", "B")].Racers[0].Request.NowMS--
		}},
		{"busy_timeout read back", results.ProcessesFile, "sqlite", func(tb testing.TB, h *hist) {
			h.entry(tb, h.find(tb, "2-within-ttl/legacy", "B"), 1).SQLite.BusyTimeoutMS = 0
		}},
		{"extra process line", results.ProcessesFile, "process 3", func(tb testing.TB, h *hist) {
			p := h.procs[0]
			p.ID, p.Label = 3, MemberLabel(2)
			p.Argv = append([]string{"idemlab", "worker", wc.PoolWorker}, h.st.PoolArgs(p.Label).Argv()...)
			p.Stdout = `{"worker":"claim.pool","points":[],"result":{"label":"pool-3","races":[]}}` + "\n"
			h.procs = append(h.procs, p)
		}},
		{"one process in two slots of a race", results.ObservationsFile, "racers[1].process_id", func(tb testing.TB, h *hist) {
			o := &h.obs[h.find(tb, "2-within-ttl/ttl", "B")]
			o.Racers[1].ProcessID = o.Racers[0].ProcessID
		}},
		{"member exit code", results.ProcessesFile, "exit_code", func(tb testing.TB, h *hist) {
			h.procs[1].ExitCode = 3
		}},
		{"member argv ttl", results.ProcessesFile, "argv", func(tb testing.TB, h *hist) {
			for i, a := range h.procs[0].Argv {
				if a == "-ttl-ms" {
					h.procs[0].Argv[i+1] = "1"
				}
			}
		}},
		{"crash point in env", results.ProcessesFile, "env", func(tb testing.TB, h *hist) {
			h.procs[0].Env = map[string]string{protocol.EnvCrashAt: "x"}
		}},
		{"loser claims a win within the TTL", results.ObservationsFile, "row.count", func(tb testing.TB, h *hist) {
			e := h.entry(tb, h.find(tb, "2-within-ttl/ttl", "B"), 0)
			e.Outcome.Won, e.Outcome.Changes = true, 1
		}},
		{"row count", results.ObservationsFile, "row.count", func(tb testing.TB, h *hist) {
			h.obs[h.find(tb, "3-after-ttl/ttl", "B")].Row.Count = 3
		}},
		{"released before a racer was ready", results.ProcessesFile, "released_at_us", func(tb testing.TB, h *hist) {
			i := h.find(tb, "6-forged-past/ttl", "B")
			h.obs[i].ReleasedAtUS = h.entry(tb, i, 1).ReadyAtUS - 1
		}},
		{"file reused by another round", results.ObservationsFile, "db", func(tb testing.TB, h *hist) {
			a, b := h.find(tb, "1-fresh/legacy", "A"), h.find(tb, "1-fresh/ttl", "A")
			h.obs[b].DB = h.obs[a].DB
			for k := range h.obs[b].Racers {
				h.obs[b].Racers[k].Request.DB = h.obs[a].DB
				h.entry(tb, b, k).Request.DB = h.obs[a].DB
			}
		}},
		{"race line dropped", results.ObservationsFile, "condition", func(tb testing.TB, h *hist) {
			h.obs = h.obs[:len(h.obs)-1]
		}},
		{"repetition", results.ObservationsFile, "repetition", func(tb testing.TB, h *hist) {
			h.obs[h.find(tb, "4-null-claimed-at/ttl", "A")].Repetition = 2
		}},
		{"table layout", results.ObservationsFile, "claimed_at_column", func(tb testing.TB, h *hist) {
			h.obs[h.find(tb, "7-old-schema/ttl", "B")].ClaimedAtColumn = true
		}},
		{"racer's now outside the race", results.ProcessesFile, "outcome.now_ms", func(tb testing.TB, h *hist) {
			h.entry(tb, h.find(tb, "2-within-ttl/ttl", "B"), 1).Outcome.NowMS += 10_000
		}},
		{"statement path", results.ProcessesFile, "outcome.path", func(tb testing.TB, h *hist) {
			h.entry(tb, h.find(tb, "7-old-schema/ttl", "A"), 0).Outcome.Path = wc.PathUpsert
		}},
		{"report names another worker", results.ProcessesFile, "stdout", func(tb testing.TB, h *hist) {
			h.procs[0].Stdout = strings.Replace(string(h.records(tb).Processes[0].Stdout), wc.PoolWorker, wc.RaceWorker, 1)
		}},
	}
	clean := history(t, st)
	if _, findings := fold(t, st, clean.records(t)); len(findings) > 0 {
		t.Fatalf("the clean history has findings: %v", findings)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := history(t, st)
			tt.edit(t, h)
			_, findings := fold(t, st, h.records(t))
			for _, f := range findings {
				if f.File == tt.file && strings.Contains(f.Field, tt.field) {
					return
				}
			}
			t.Errorf("no finding in %s naming %q; got %d:", tt.file, tt.field, len(findings))
			for _, f := range findings {
				t.Logf("  %s", f)
			}
		})
	}
}
