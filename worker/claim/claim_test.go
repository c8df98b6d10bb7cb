package claim

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

const (
	ttl   = 60 * time.Second
	ttlMS = int64(60000)
	t0    = int64(1_700_000_000_000)
)

func openFile(tb testing.TB, v SchemaVersion) *sql.DB {
	tb.Helper()
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, Options(filepath.Join(tb.TempDir(), "claims.sqlite3"), 5*time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if err := CreateSchema(ctx, db, v); err != nil {
		tb.Fatal(err)
	}
	return db
}

func event(ts int64) Event {
	return Event{Fingerprint: "fp-1", Source: "api", Level: "error", Message: "timeout", Time: ts}
}

// step is one in-process claim with an injected now.
type step struct {
	v        Variant
	now      int64
	callerTS int64
	wantWon  bool
	wantPath Path
}

func TestClaimRounds(t *testing.T) {
	tests := []struct {
		name      string
		schema    SchemaVersion
		steps     []step
		wantCount int64
		wantNull  bool
	}{
		{"1 fresh row, legacy", SchemaNew, []step{{Legacy, t0, t0, true, PathLegacy}}, 1, true},
		{"1 fresh row, ttl", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}}, 1, false},
		{"2 within the ttl, legacy", SchemaNew, []step{{Legacy, t0, t0, true, PathLegacy}, {Legacy, t0 + 1000, t0 + 1000, false, PathLegacy}}, 1, true},
		{"2 within the ttl, ttl", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {TTL, t0 + 1000, t0 + 1000, false, PathUpsert}}, 1, false},
		{"3 after the ttl, legacy keeps losing", SchemaNew, []step{{Legacy, t0, t0, true, PathLegacy}, {Legacy, t0 + 2*ttlMS, t0 + 2*ttlMS, false, PathLegacy}}, 1, true},
		{"3 after the ttl, ttl re-claims", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {TTL, t0 + 2*ttlMS, t0 + 2*ttlMS, true, PathUpsert}}, 2, false},
		{"4 legacy row with claimed_at NULL", SchemaNew, []step{{Legacy, t0, t0, true, PathLegacy}, {TTL, t0 + 1, t0 + 1, true, PathUpsert}}, 2, false},
		{"5 exactly at the boundary loses (strict <)", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {TTL, t0 + ttlMS, t0 + ttlMS, false, PathUpsert}}, 1, false},
		{"5 one ms past the boundary wins", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {TTL, t0 + ttlMS + 1, t0 + ttlMS + 1, true, PathUpsert}}, 2, false},
		{"6 forged future caller timestamp changes nothing", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {TTL, t0 + 1000, t0 + 100*ttlMS, false, PathUpsert}}, 1, false},
		{"6 forged past caller timestamp changes nothing", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {TTL, t0 + 2*ttlMS, 0, true, PathUpsert}}, 2, false},
		{"7 old schema falls back to the legacy claim", SchemaOld, []step{{TTL, t0, t0, true, PathFallback}, {TTL, t0 + 1000, t0 + 1000, false, PathFallback}, {TTL, t0 + 2*ttlMS, t0 + 2*ttlMS, false, PathFallback}}, 1, true},
		{"mutant do-nothing never re-claims", SchemaNew, []step{{MutantDoNothing, t0, t0, true, PathUpsert}, {MutantDoNothing, t0 + 2*ttlMS, t0 + 2*ttlMS, false, PathUpsert}}, 1, false},
		{"mutant no-where re-claims within the ttl", SchemaNew, []step{{MutantNoWhere, t0, t0, true, PathUpsert}, {MutantNoWhere, t0 + 1, t0 + 1, true, PathUpsert}}, 2, false},
		{"mutant null-excluded misses NULL rows", SchemaNew, []step{{Legacy, t0, t0, true, PathLegacy}, {MutantNullExcluded, t0 + 1, t0 + 1, false, PathUpsert}}, 1, true},
		{"mutant boundary-flipped wins at the boundary", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {MutantBoundaryFlipped, t0 + ttlMS, t0 + ttlMS, true, PathUpsert}}, 2, false},
		{"mutant caller-time obeys a forged timestamp", SchemaNew, []step{{TTL, t0, t0, true, PathUpsert}, {MutantCallerTime, t0 + 1000, t0 + 100*ttlMS, true, PathUpsert}}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := openFile(t, tt.schema)
			for i, s := range tt.steps {
				out, err := Claim(ctx, db, s.v, event(s.callerTS), s.now, ttl)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if out.Won != s.wantWon || out.Path != s.wantPath {
					t.Fatalf("step %d (%s): won=%v path=%s, want won=%v path=%s", i, s.v, out.Won, out.Path, s.wantWon, s.wantPath)
				}
				if out.Won != (out.Changes == 1) {
					t.Fatalf("step %d: won=%v but changes=%d", i, out.Won, out.Changes)
				}
			}
			row, ok, err := ReadRow(ctx, store.SQLiteDB(db), "fp-1")
			if err != nil || !ok {
				t.Fatalf("read row: ok=%v err=%v", ok, err)
			}
			if row.Count != tt.wantCount || (row.ClaimedAt == nil) != tt.wantNull {
				t.Fatalf("row count=%d claimed_at=%v, want count=%d null=%v", row.Count, row.ClaimedAt, tt.wantCount, tt.wantNull)
			}
		})
	}
}

// TestCallerTimeIsStoredNotUsed checks that the event's timestamp lands in
// last_seen and the worker's now in claimed_at.
func TestCallerTimeIsStoredNotUsed(t *testing.T) {
	ctx := context.Background()
	db := openFile(t, SchemaNew)
	if _, err := Claim(ctx, db, TTL, event(t0), t0, ttl); err != nil {
		t.Fatal(err)
	}
	forged := t0 + 100*ttlMS
	now := t0 + 2*ttlMS
	if _, err := Claim(ctx, db, TTL, event(forged), now, ttl); err != nil {
		t.Fatal(err)
	}
	row, _, err := ReadRow(ctx, store.SQLiteDB(db), "fp-1")
	if err != nil {
		t.Fatal(err)
	}
	if row.FirstSeen != t0 || row.LastSeen != forged || row.ClaimedAt == nil || *row.ClaimedAt != now {
		t.Fatalf("first_seen=%d last_seen=%d claimed_at=%v, want %d, %d, %d", row.FirstSeen, row.LastSeen, row.ClaimedAt, t0, forged, now)
	}
}

func TestReclaimKeepsDownstreamFields(t *testing.T) {
	ctx := context.Background()
	db := openFile(t, SchemaNew)
	if _, err := Claim(ctx, db, TTL, event(t0), t0, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := FollowUp(ctx, db, "fp-1", "needs-triage", "ext-1"); err != nil {
		t.Fatal(err)
	}
	out, err := Claim(ctx, db, TTL, event(t0+2*ttlMS), t0+2*ttlMS, ttl)
	if err != nil || !out.Won {
		t.Fatalf("re-claim: won=%v err=%v", out.Won, err)
	}
	row, _, err := ReadRow(ctx, store.SQLiteDB(db), "fp-1")
	if err != nil {
		t.Fatal(err)
	}
	if row.Classification == nil || *row.Classification != "needs-triage" || row.ExternalID == nil || *row.ExternalID != "ext-1" || row.Count != 2 {
		t.Fatalf("after re-claim: %+v", row)
	}
}

// TestFallbackOnOldSchemaNeverAllWinners claims one fingerprint many times
// on a real old-schema file: exactly one caller may win.
func TestFallbackOnOldSchemaNeverAllWinners(t *testing.T) {
	ctx := context.Background()
	db := openFile(t, SchemaOld)
	has, err := HasClaimedAt(ctx, store.SQLiteDB(db))
	if err != nil || has {
		t.Fatalf("old schema has claimed_at=%v err=%v", has, err)
	}
	winners := 0
	for i := 0; i < 8; i++ {
		for _, v := range append([]Variant{TTL}, Mutants...) {
			out, err := Claim(ctx, db, v, event(t0), t0+int64(i)*ttlMS, ttl)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if out.Path != PathFallback {
				t.Fatalf("%s: path %s, want %s", v, out.Path, PathFallback)
			}
			if out.Won {
				winners++
			}
		}
	}
	if winners != 1 {
		t.Fatalf("%d winners on the old schema, want 1", winners)
	}
}

// TestOtherErrorsDoNotFallBack shows that only the missing column falls
// back: a missing table is an error, not a win and not a legacy claim.
func TestOtherErrorsDoNotFallBack(t *testing.T) {
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, Options(filepath.Join(t.TempDir(), "empty.sqlite3"), time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, err := Claim(ctx, db, TTL, event(t0), t0, ttl)
	if err == nil || out.Won || out.Path == PathFallback {
		t.Fatalf("claim on a file without the table: out=%+v err=%v, want an error", out, err)
	}
}

func TestSQLVariantsAreDistinct(t *testing.T) {
	seen := map[string]Variant{}
	for _, v := range append(append([]Variant{}, Claims...), Mutants...) {
		q, err := SQL(v)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[q]; ok && !(v == MutantCallerTime && other == TTL) {
			t.Fatalf("%s has the same SQL as %s", v, other)
		}
		seen[q] = v
	}
	if _, err := ParseVariant("ttl-ish"); err == nil {
		t.Fatal("ParseVariant accepted an unknown name")
	}
}

func TestClockPinnedAndOffset(t *testing.T) {
	if got := (Clock{PinnedMS: 42}).Now(); got != 42 {
		t.Fatalf("pinned clock = %d, want 42", got)
	}
	before := time.Now().UnixMilli()
	got := Clock{OffsetMS: ttlMS, PinnedMS: NoPin}.Now()
	if got < before+ttlMS || got > time.Now().UnixMilli()+ttlMS {
		t.Fatalf("offset clock = %d, want about %d", got, before+ttlMS)
	}
}
