package explore

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// send is a receiver log row: seq, item, outcome, generation.
func send(seq int, item, outcome string, gen int64) string {
	return fmt.Sprintf("%d|%s|notify_external|%s|%d|rcpt-%s", seq, item, outcome, gen, item)
}

// logRow is a lease_log row.
func logRow(seq int, kind, holder string, gen int64, item, status string, at int64) string {
	step := ""
	if item != "" {
		step = "notify_external"
	}
	return fmt.Sprintf("%d|%s|%s|%d|%s|%s|%s|%d", seq, kind, holder, gen, item, step, status, at)
}

func violated(tb testing.TB, h History, invs []Invariant) []string {
	tb.Helper()
	var got []string
	for _, v := range Check(h, invs) {
		got = append(got, v.Invariant)
	}
	return got
}

func mustPattern(tb testing.TB, name string) Pattern {
	tb.Helper()
	p, ok := LookupPattern(name)
	if !ok {
		tb.Fatalf("no pattern %s", name)
	}
	return p
}

// TestBatchInvariants: the receiver's log decides, whatever the journal.
func TestBatchInvariants(t *testing.T) {
	invs := mustPattern(t, "batch-journal").Invariants
	rec := func(sends ...string) Step {
		return Step{Role: RoleRecovery, Rows: State{TableSends: sends, TableJournal: []string{}}}
	}
	crash := Step{Role: RoleDelivery, ExitCode: 17, CrashedAt: "after-send-accepted:item-001"}
	tests := []struct {
		name string
		h    History
		want []string
	}{
		{"each item once", History{Items: 2, Steps: []Step{crash, rec(send(1, "item-001", "accepted", 0), send(2, "item-002", "accepted", 0))}}, nil},
		{"rerun resent item 1", History{Items: 2, Steps: []Step{crash, rec(send(1, "item-001", "accepted", 0), send(2, "item-001", "accepted", 0), send(3, "item-002", "accepted", 0))}}, []string{"each-item-sent-once"}},
		{"item 2 never sent", History{Items: 2, Steps: []Step{crash, rec(send(1, "item-001", "accepted", 0))}}, []string{"each-item-sent-once"}},
		{"a refused send is not a delivery", History{Items: 1, Steps: []Step{crash, rec(send(1, "item-001", "stale", 1), send(2, "item-001", "accepted", 2))}}, nil},
		{"final run failed", History{Items: 1, Steps: []Step{crash, {Role: RoleRecovery, ExitCode: 3, Rows: State{TableSends: []string{send(1, "item-001", "accepted", 0)}}}}}, []string{"recovery-acknowledged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, violated(t, tt.h, invs)); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
	st := Settings{Items: 2}
	for _, tt := range []struct {
		sends []string
		want  string
	}{
		{[]string{send(1, "item-001", "accepted", 0), send(2, "item-002", "accepted", 0)}, OutcomeClean},
		{[]string{send(1, "item-001", "accepted", 0), send(2, "item-001", "accepted_no_reply", 0), send(3, "item-002", "accepted", 0)}, Duplicates(1)},
		{[]string{send(1, "item-001", "accepted", 0)}, "duplicates-0-lost-1"},
	} {
		if got := classifyBatch(st, State{TableSends: tt.sends}); got != tt.want {
			t.Errorf("classifyBatch(%v) = %s, want %s", tt.sends, got, tt.want)
		}
	}
}

// TestClaimInvariants: wins inside one TTL, and downstream fields lost or
// overwritten, are caught; a re-claim after the TTL is not.
func TestClaimInvariants(t *testing.T) {
	invs := mustPattern(t, "claim-ttl").Invariants
	row := func(count int, at string, class, ext string) State {
		return State{TableClaims: []string{fmt.Sprintf("fp|%d|%s|%s|%s", count, at, class, ext)}}
	}
	step := func(role string, s State) Step { return Step{Role: role, Rows: s} }
	crash := func(s State) Step { return Step{Role: RoleDelivery, ExitCode: 17, Rows: s} }
	tests := []struct {
		name string
		h    History
		want []string
	}{
		{"crash after the claim, re-claim after the TTL", History{Steps: []Step{crash(row(1, "1000", "", "")), step(RoleProbe, row(1, "1000", "", "")), step(RoleRecovery, row(2, "61001", "c", "ext-recovery"))}}, nil},
		{"probe wins inside the TTL", History{Steps: []Step{crash(row(1, "1000", "", "")), step(RoleProbe, row(2, "1500", "c", "ext-probe")), step(RoleRecovery, row(3, "70000", "c", "ext-probe"))}}, []string{"one-winner-per-ttl"}},
		{"re-claim exactly at the TTL", History{Steps: []Step{crash(row(1, "1000", "", "")), step(RoleRecovery, row(2, "61000", "c", "ext-recovery"))}}, []string{"one-winner-per-ttl"}},
		{"downstream overwritten", History{Steps: []Step{step(RoleDelivery, row(1, "1000", "c", "ext-delivery")), step(RoleRecovery, row(2, "70000", "c", "ext-recovery"))}}, []string{"downstream-kept"}},
		{"downstream cleared", History{Steps: []Step{step(RoleDelivery, row(1, "1000", "c", "ext-delivery")), step(RoleRecovery, row(2, "70000", "", ""))}}, []string{"downstream-kept", "downstream-written"}},
		{"never done", History{Steps: []Step{crash(row(1, "1000", "", "")), step(RoleRecovery, row(1, "1000", "", ""))}}, []string{"downstream-written"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, violated(t, tt.h, invs)); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
}

// leaseState is a one-item lease file after holder b took over from a.
func leaseState(log []string, sends ...string) State {
	return State{
		TableLease:        []string{"b|2|5000"},
		TableLeaseJournal: []string{"item-001|notify_external|SUCCEEDED|2", "item-001|transform|SUCCEEDED|1", "item-001|validate|SUCCEEDED|1"},
		TableLeaseLog:     log,
		TableSends:        sends,
	}
}

// TestLeaseInvariants covers the fence: the unfenced holder's late send
// and write are caught, the fenced holder's refused send is not, and a
// takeover within the TTL is an overlap.
func TestLeaseInvariants(t *testing.T) {
	invs := mustPattern(t, "lease-batch").Invariants
	base := []string{
		logRow(1, "grant", "a", 1, "", "", 1000),
		logRow(2, "write", "a", 1, "item-001", "IN_FLIGHT", 1010),
	}
	takeover := append(append([]string{}, base...),
		logRow(3, "grant", "b", 2, "", "", 1400),
		logRow(4, "write", "b", 2, "item-001", "IN_FLIGHT", 1401),
		logRow(5, "write", "b", 2, "item-001", "SUCCEEDED", 1402))
	stale := append(append([]string{}, takeover...), logRow(6, "write", "a", 1, "item-001", "SUCCEEDED", 1500))
	two := func(s State) History {
		return History{Items: 1, Steps: []Step{{Role: RoleSuccessor, Rows: s}, {Role: RoleRecovery, Rows: s}}}
	}
	tests := []struct {
		name string
		h    History
		want []string
	}{
		{"fenced: the late send is refused and logged", two(leaseState(takeover, send(1, "item-001", "accepted", 2), send(2, "item-001", "stale", 1))), nil},
		{"unfenced: the late send lands and the row is overwritten", two(leaseState(stale, send(1, "item-001", "accepted", 2), send(2, "item-001", "accepted", 1))),
			[]string{"each-item-sent-once", "no-stale-accept", "no-stale-journal-write"}},
		{"unfenced after the send: only the write", two(leaseState(stale, send(1, "item-001", "accepted", 1))), []string{"no-stale-journal-write"}},
		{"takeover inside the TTL", two(leaseState([]string{logRow(1, "grant", "a", 1, "", "", 1000), logRow(2, "grant", "b", 2, "", "", 1200), logRow(3, "write", "b", 2, "item-001", "SUCCEEDED", 1201)}, send(1, "item-001", "accepted", 2))),
			[]string{"no-overlapping-holders"}},
		{"journal left unfinished", History{Items: 2, Steps: []Step{{Role: RoleRecovery, Rows: leaseState(takeover, send(1, "item-001", "accepted", 2), send(2, "item-002", "accepted", 2))}}}, []string{"journal-complete", "journal-complete", "journal-complete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, violated(t, tt.h, invs)); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
	if got := classifyLease(Settings{Items: 1}, leaseState(stale, send(1, "item-001", "accepted", 2), send(2, "item-001", "accepted", 1))); got != takeoverModel()[0] {
		t.Errorf("the unfenced takeover before a send classifies as %s, want %s", got, takeoverModel()[0])
	}
}

// TestMatrixTableWidth: fifty items fold into two rows within 100 columns.
func TestMatrixTableWidth(t *testing.T) {
	m := Matrix{Patterns: []string{"separate-commit", "single-transaction", "batch-journal", "batch-rerun-all", "claim-ttl", "lease-batch"}}
	for i := 1; i <= 50; i++ {
		for _, k := range []string{"before-send", "after-send-accepted"} {
			m.Points = append(m.Points, fmt.Sprintf("%s:item-%03d", k, i))
			m.Cells = append(m.Cells, []string{"", "", OutcomeClean, Duplicates(i), "", OutcomeClean})
			m.Violating = append(m.Violating, []bool{false, false, false, true, false, false})
		}
	}
	tb := MatrixTable(m)
	if len(tb.Rows) != 2 {
		t.Fatalf("%d rows, want the two point kinds", len(tb.Rows))
	}
	widths := make([]int, len(tb.Header))
	for _, r := range append([][]string{tb.Header}, tb.Rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	w := 2 * (len(widths) - 1)
	for _, n := range widths {
		w += n
	}
	if w > 100 {
		t.Errorf("the table is %d columns wide: %v", w, widths)
	}
	if got := tb.Rows[0][4]; got != "✗ 50/50 +1..+50" {
		t.Errorf("rerun-all cell %q", got)
	}
}
