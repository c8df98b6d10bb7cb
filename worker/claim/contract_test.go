package claim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/store"
)

// TestPoolArgsArgv pins the rendering recorded folders hold, and reads it
// back.
func TestPoolArgsArgv(t *testing.T) {
	a := PoolArgs{Label: "pool-1", Fingerprint: "fp", Source: "svc", Level: "error", Message: "m", Classification: "c", TTLMS: 60000, BusyTimeoutMS: 5000}
	want := []string{"-label", "pool-1", "-fingerprint", "fp", "-source", "svc", "-level", "error", "-message", "m", "-classification", "c", "-ttl-ms", "60000", "-busy-timeout-ms", "5000"}
	if diff := cmp.Diff(want, a.Argv()); diff != "" {
		t.Errorf("Argv (-want +got):\n%s", diff)
	}
	got, err := ParsePoolArgs(a.Argv())
	if err != nil || got != a {
		t.Errorf("ParsePoolArgs(Argv) = %+v, %v; want %+v", got, err, a)
	}
}

// TestPoolArgsUserStatements: the user's statements are on the command
// line only when given, and read back as given.
func TestPoolArgsUserStatements(t *testing.T) {
	a := PoolArgs{Label: "pool-1", Fingerprint: "fp", TTLMS: 60000, ClaimSQL: "INSERT INTO event_claims -- :fp\n", FallbackSQL: "INSERT 'x'"}
	argv := a.Argv()
	if diff := cmp.Diff([]string{"-claim-sql", a.ClaimSQL, "-fallback-sql", a.FallbackSQL}, argv[len(argv)-4:]); diff != "" {
		t.Errorf("Argv tail (-want +got):\n%s", diff)
	}
	got, err := ParsePoolArgs(argv)
	if err != nil || got != a {
		t.Errorf("ParsePoolArgs(Argv) = %+v, %v; want %+v", got, err, a)
	}
	if v, err := got.variant(User); err != nil || v != User {
		t.Errorf("variant(user) = %q, %v", v, err)
	}
}

// TestArgsRoundTrip: every claim worker reads back what its Argv renders,
// pinned clock and flags off included.
func TestArgsRoundTrip(t *testing.T) {
	c := ClaimerArgs{DB: "claims.sqlite3", Variant: MutantNoWhere, TTLMS: 1000, BusyTimeoutMS: 0, ReadyFD: 3, Event: event(t0)}
	race := RaceArgs{ClaimerArgs: c, Label: "r1", ClockOffsetMS: -5, NowMS: t0, FollowUp: true, Classification: "x"}
	got, err := ParseRaceArgs(race.Argv())
	if diff := cmp.Diff(race, got); err != nil || diff != "" {
		t.Errorf("ParseRaceArgs(Argv) (%v) (-want +got):\n%s", err, diff)
	}
	race.NowMS, race.FollowUp = NoPin, false
	if got, err = ParseRaceArgs(race.Argv()); err != nil || got != race {
		t.Errorf("unpinned: ParseRaceArgs(Argv) = %+v, %v", got, err)
	}
	bench := BenchArgs{ClaimerArgs: c, Count: 7}
	gotB, err := ParseBenchArgs(bench.Argv())
	if err != nil || gotB != bench {
		t.Errorf("ParseBenchArgs(Argv) = %+v, %v; want %+v", gotB, err, bench)
	}
}

func TestParseArgsRefuses(t *testing.T) {
	c := ClaimerArgs{DB: "f", Variant: TTL, TTLMS: 1000, Event: event(t0)}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"pool without ttl", parseErr(ParsePoolArgs(PoolArgs{Label: "l", Fingerprint: "f"}.Argv())), "positive -ttl-ms"},
		{"race without label", parseErr(ParseRaceArgs(RaceArgs{ClaimerArgs: c}.Argv())), "-label is required"},
		{"race with an unknown variant", parseErr(ParseRaceArgs(RaceArgs{ClaimerArgs: ClaimerArgs{DB: "f", Variant: "nope", TTLMS: 1, Event: event(t0)}, Label: "l"}.Argv())), "unknown claim variant"},
		{"bench without count", parseErr(ParseBenchArgs(BenchArgs{ClaimerArgs: c}.Argv())), "-count must be positive"},
		{"pool with a fallback and no claim", parseErr(ParsePoolArgs(PoolArgs{Label: "l", Fingerprint: "f", TTLMS: 1, FallbackSQL: "INSERT"}.Argv())), "-fallback-sql is given without -claim-sql"},
		{"pool asked for the user's claim without one", parseErr(PoolArgs{Label: "l"}.variant(User)), "given no -claim-sql"},
		{"bench with negative busy timeout", parseErr(ParseBenchArgs(BenchArgs{ClaimerArgs: ClaimerArgs{DB: "f", Variant: TTL, TTLMS: 1, BusyTimeoutMS: -1, Event: event(t0)}, Count: 1}.Argv())), "must not be negative"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, tt.err, tt.want)
		}
	}
}

func parseErr[T any](_ T, err error) error { return err }

// TestReadClaims reads a file without the table, with an empty one and
// with rows, and renders and parses the recorded lines.
func TestReadClaims(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, Options(filepath.Join(t.TempDir(), "claims.sqlite3"), 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rows, err := ReadClaims(ctx, st); err != nil || rows != nil {
		t.Fatalf("no table: %v, %v; want nil", rows, err)
	}
	if err := CreateSchema(ctx, st.DB, SchemaNew); err != nil {
		t.Fatal(err)
	}
	if rows, err := ReadClaims(ctx, st); err != nil || rows == nil || len(rows) != 0 {
		t.Fatalf("empty table: %v, %v; want no rows", rows, err)
	}
	for _, fp := range []string{"fp-2", "fp-1"} {
		ev := event(t0)
		ev.Fingerprint = fp
		if _, err := Claim(ctx, st.DB, TTL, ev, t0+5, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FollowUp(ctx, st.DB, "fp-2", "triage", ExternalIDFor("w")); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadClaims(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range rows {
		lines = append(lines, r.Cells().Line())
	}
	want := []string{"fp-1|1|1700000000005||", "fp-2|1|1700000000005|triage|ext-w"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	one, ok := ParseLine(lines[1])
	if !ok || one != rows[1].Cells() {
		t.Errorf("ParseLine(%q) = %+v, %v; want %+v", lines[1], one, ok, rows[1].Cells())
	}
	if _, ok := ParseLine("fp|1|2"); ok {
		t.Error("a line of three cells parsed")
	}
}
