package explore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// TestArgvRenderings pins each worker's command line as recorded folders
// hold it, and reads every one back.
func TestArgvRenderings(t *testing.T) {
	claim := ClaimArgs{DB: "c.sqlite3", Fingerprint: "fp", Holder: "probe", Classification: "k", TTLMS: 60000, OffsetMS: 60001}
	lease := LeaseArgs{DB: "l.sqlite3", Job: "job", Receiver: "http://127.0.0.1:1", Holder: "a", Items: 3, TTLMS: 300, OffsetMS: 0, Fence: false, WaitMS: 10000, PollMS: 20}
	paused := lease
	paused.Fence, paused.PauseAt, paused.ReadyFD = true, "before-send:item-001", 3
	race := RaceArgs{Delivery: wr.Args{DB: "e.sqlite3", Pattern: wr.SeparateCommit, Event: wr.Event{ID: "e", JobKey: "k"}}, ReadyFD: 3, MaxAttempts: 5}
	tests := []struct {
		name  string
		argv  []string
		want  []string
		parse func([]string) (any, error)
		value any
	}{
		{"claim", claim.Argv(), []string{"-db", "c.sqlite3", "-fingerprint", "fp", "-holder", "probe", "-classification", "k", "-ttl-ms", "60000", "-clock-offset-ms", "60001"},
			func(a []string) (any, error) { return ParseClaimArgs(a) }, claim},
		{"lease", lease.Argv(), []string{"-db", "l.sqlite3", "-job", "job", "-receiver", "http://127.0.0.1:1", "-holder", "a", "-items", "3", "-ttl-ms", "300", "-clock-offset-ms", "0", "-fence=false", "-wait-ms", "10000", "-poll-ms", "20"},
			func(a []string) (any, error) { return ParseLeaseArgs(a) }, lease},
		{"paused lease", paused.Argv(), []string{"-db", "l.sqlite3", "-job", "job", "-receiver", "http://127.0.0.1:1", "-holder", "a", "-items", "3", "-ttl-ms", "300", "-clock-offset-ms", "0", "-fence=true", "-wait-ms", "10000", "-poll-ms", "20", "-pause-at", "before-send:item-001", "-ready-fd", "3"},
			func(a []string) (any, error) { return ParseLeaseArgs(a) }, paused},
		{"racer", race.Argv(), []string{"-db", "e.sqlite3", "-pattern", "separate-commit", "-event-id", "e", "-job-key", "k", "-ready-fd", "3", "-max-attempts", "5"},
			func(a []string) (any, error) { return ParseRaceArgs(a) }, race},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.argv); diff != "" {
			t.Errorf("%s: Argv (-want +got):\n%s", tt.name, diff)
		}
		got, err := tt.parse(tt.argv)
		if diff := cmp.Diff(tt.value, got); err != nil || diff != "" {
			t.Errorf("%s: parse(Argv) (%v) (-want +got):\n%s", tt.name, err, diff)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	race := RaceArgs{Delivery: wr.Args{DB: "e", Pattern: wr.SingleTransaction, Event: wr.Event{ID: "e", JobKey: "k"}}, ReadyFD: 2, MaxAttempts: 1}
	_, errRace := ParseRaceArgs(race.Argv())
	_, errPattern := ParseRaceArgs([]string{"-db", "e", "-pattern", "x", "-event-id", "e", "-job-key", "k", "-ready-fd", "3"})
	_, errLease := ParseLeaseArgs(LeaseArgs{DB: "l", Job: "j", Receiver: "r", Holder: "a", Items: 1, TTLMS: 1, PollMS: 1, PauseAt: "p"}.Argv())
	_, errClaim := ParseClaimArgs(ClaimArgs{DB: "c", Fingerprint: "f", Holder: "h"}.Argv())
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"racer on descriptor 2", errRace, "-ready-fd (3 or more)"},
		{"racer with an unknown pattern", errPattern, "unknown pattern"},
		{"lease paused without a descriptor", errLease, "-ready-fd with -pause-at"},
		{"claim without a TTL", errClaim, "positive -ttl-ms"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, tt.err, tt.want)
		}
	}
}

// TestReadLease reads a file without the tables and one with rows, and
// renders them as explore records them.
func TestReadLease(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, LeaseOptions(filepath.Join(t.TempDir(), "lease.sqlite3")))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := ReadLease(ctx, st)
	if err != nil || s.Leases != nil || s.Journal != nil || s.Log != nil {
		t.Fatalf("no tables read as %+v, %v; want nil tables", s, err)
	}
	if diff := cmp.Diff(map[string][]string{TableLease: {}, TableLeaseJournal: {}, TableLeaseLog: {}}, s.Lines()); diff != "" {
		t.Errorf("missing tables render (-want +got):\n%s", diff)
	}
	for _, q := range []string{
		LeaseSchema,
		"INSERT INTO job_lease VALUES ('job', 'b', 2, 1700)",
		"INSERT INTO lease_journal VALUES ('job', 'item-002', 'notify_external', 'SUCCEEDED', 2, 'r'), ('job', 'item-001', 'validate', 'IN_FLIGHT', 1, NULL)",
		"INSERT INTO lease_log (kind, holder, generation, at_ms) VALUES ('grant', 'a', 1, 1000)",
		"INSERT INTO lease_log (kind, holder, generation, item_id, step_name, status, at_ms) VALUES ('write', 'a', 1, 'item-001', 'validate', 'IN_FLIGHT', 1001)",
	} {
		if _, err := st.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if s, err = ReadLease(ctx, st); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		TableLease:        {"b|2|1700"},
		TableLeaseJournal: {"item-001|validate|IN_FLIGHT|1", "item-002|notify_external|SUCCEEDED|2"},
		TableLeaseLog:     {"1|grant|a|1||||1000", "2|write|a|1|item-001|validate|IN_FLIGHT|1001"},
	}
	if diff := cmp.Diff(want, s.Lines()); diff != "" {
		t.Errorf("Lines (-want +got):\n%s", diff)
	}
	e, ok := ParseLogLine(want[TableLeaseLog][1])
	if !ok || e != s.Log[1] {
		t.Errorf("ParseLogLine = %+v, %v; want %+v", e, ok, s.Log[1])
	}
}
