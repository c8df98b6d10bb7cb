package claim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/worker"
	wc "idemlab/worker/claim"
)

func TestMain(m *testing.M) { worker.TestMain(m) }

func smallInput(workers, reps int) Input {
	return Input{Fingerprint: "svc:error:timeout", Source: "svc", Level: "error", Message: "timeout",
		Classification: "needs-triage", TTLSeconds: 60, Workers: workers, Repetitions: reps,
		MutantRepetitions: 1, BusyTimeoutMS: 5000}
}

func pick(tb testing.TB, ids ...string) []Round {
	var out []Round
	for _, id := range ids {
		out = append(out, roundByID(tb, id))
	}
	return out
}

// TestRaceRealProcesses races 4 real processes, twice per round, on the
// rounds that decide the article's claims, and checks the records.
func TestRaceRealProcesses(t *testing.T) {
	e := harnesstest.New(t)
	in := smallInput(4, 2)
	rounds := pick(t, "1-fresh", "3-after-ttl", "7-old-schema")
	res, err := Run(context.Background(), Config{Runner: e.Runner, Recorder: e.Recorder, Input: in, Rounds: rounds, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pass {
		for _, c := range res.Conditions {
			t.Errorf("%s: %s", c.Name, c.Diff)
		}
	}
	if len(res.Conditions) != 6 {
		t.Fatalf("%d conditions, want 6", len(res.Conditions))
	}
	obs := e.Lines(t, harness.ObservationsFile)
	// Per claim and repetition: round 1 one race, round 3 two, round 7 two.
	if want := 2 * 2 * 5; len(obs) != want {
		t.Fatalf("%d observations, want %d", len(obs), want)
	}
	procs := e.Lines(t, harness.ProcessesFile)
	// Racers: round 1: 4, round 3: 1+4, round 7: 4+4.
	if want := 2 * 2 * (4 + 5 + 8); len(procs) != want {
		t.Fatalf("%d processes, want %d", len(procs), want)
	}
	for _, p := range procs {
		if p["worker"] != RaceWorker || p["exit_code"].(float64) != 0 {
			t.Fatalf("process %v", p)
		}
	}
}

// TestMutantTable runs the mutant table with real processes on the rounds
// that each catch one mutant (the experiment runs all of them): the claims
// pass and every mutant is killed by its round.
func TestMutantTable(t *testing.T) {
	e := harnesstest.New(t)
	rounds := pick(t, "2-within-ttl", "3-after-ttl", "4-null-claimed-at", "5-at-boundary", "6-forged-future")
	res, err := Run(context.Background(), Config{Runner: e.Runner, Recorder: e.Recorder, Input: smallInput(2, 1),
		Rounds: rounds, Mutants: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Conditions {
		if !c.Pass {
			t.Errorf("%s failed: %s", c.Name, c.Diff)
		}
	}
	table := res.Extra.(Extra).Mutants
	if table == nil || len(table.Rows) != len(wc.Mutants) {
		t.Fatalf("mutant table %+v", table)
	}
	wantKiller := map[wc.Variant]string{
		wc.MutantDoNothing:       "3-after-ttl",
		wc.MutantNoWhere:         "2-within-ttl",
		wc.MutantNullExcluded:    "4-null-claimed-at",
		wc.MutantBoundaryFlipped: "5-at-boundary",
		wc.MutantCallerTime:      "6-forged-future",
	}
	for _, row := range table.Rows {
		if !row.Killed || !contains(row.KilledBy, wantKiller[row.Mutant]) {
			t.Errorf("%s killed by %v, want it killed by %s", row.Mutant, row.KilledBy, wantKiller[row.Mutant])
		}
	}
	if !res.Pass {
		t.Fatal("run failed")
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestWrongOracleFailsTheRun shows that the check can fail: an oracle that
// believes the legacy claim re-claims after the TTL is contradicted by the
// real race.
func TestWrongOracleFailsTheRun(t *testing.T) {
	e := harnesstest.New(t)
	wrong := func(kind wc.Variant, r Round, b wc.Boundary, p Params) []RaceOutcome {
		return Expect(wc.TTL, r, b, p)
	}
	res, err := Run(context.Background(), Config{Runner: e.Runner, Recorder: e.Recorder, Input: smallInput(2, 1),
		Rounds: pick(t, "3-after-ttl"), Oracle: wrong, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass || res.Conditions[0].Pass || res.Conditions[0].Diff == "" || !res.Conditions[1].Pass {
		t.Fatalf("pass=%v conditions=%+v, want legacy to fail and ttl to pass", res.Pass, res.Conditions)
	}
}

// TestFailingRacerIsHarnessFailure races workers on a file without the
// table: their error must stop the run as a harness failure.
func TestFailingRacerIsHarnessFailure(t *testing.T) {
	e := harnesstest.New(t)
	db := filepath.Join(t.TempDir(), "empty.sqlite3")
	_, err := RunRace(context.Background(), e.Runner, RaceSpec{
		Scenario: Name, Condition: "broken", Worker: RaceWorker, Workers: 3,
		Label: func(i int) string { return "w" },
		Args: func(i int) []string {
			return []string{"-db", db, "-variant", "ttl", "-label", "w", "-fingerprint", "f", "-ttl-ms", "1000"}
		},
	})
	if !errors.Is(err, harness.ErrHarness) {
		t.Fatalf("err = %v, want a harness failure", err)
	}
}

// TestRacerExitingBeforeReleaseIsHarnessFailure gives racers a bad flag,
// so they exit before the barrier; the parent must not hang.
func TestRacerExitingBeforeReleaseIsHarnessFailure(t *testing.T) {
	e := harnesstest.New(t)
	done := make(chan error, 1)
	go func() {
		_, err := RunRace(context.Background(), e.Runner, RaceSpec{
			Scenario: Name, Condition: "early", Worker: RaceWorker, Workers: 2,
			Label: func(i int) string { return "w" },
			Args:  func(i int) []string { return []string{"-no-such-flag"} },
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, harness.ErrHarness) {
			t.Fatalf("err = %v, want a harness failure", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("RunRace hung on racers that exited before the release")
	}
}

func TestRoundFoldersRemoved(t *testing.T) {
	// The round folders live under TempDir and are removed after each
	// repetition.
	e := harnesstest.New(t)
	tmp := t.TempDir()
	if _, err := Run(context.Background(), Config{Runner: e.Runner, Recorder: e.Recorder, Input: smallInput(2, 1),
		Rounds: pick(t, "1-fresh"), TempDir: tmp}); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil || len(left) != 0 {
		t.Fatalf("left in TempDir: %v (err %v)", left, err)
	}
}
