package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/receiver"
	"idemlab/experiments/subject"
	wb "idemlab/worker/batch"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
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

func violated(tb testing.TB, h subject.History, invs []subject.Invariant) []string {
	tb.Helper()
	var got []string
	for _, v := range subject.Check(h, invs) {
		got = append(got, v.Invariant)
	}
	return got
}

// TestBatchInvariants: the receiver's log decides, whatever the journal.
func TestBatchInvariants(t *testing.T) {
	invs := Batch(wb.ModeJournal).Invariants
	rec := func(sends ...string) subject.Step {
		return subject.Step{Role: subject.RoleRecovery, Rows: subject.State{TableSends: sends, TableJournal: []string{}}}
	}
	crash := subject.Step{Role: subject.RoleDelivery, ExitCode: 17, CrashedAt: "after-send-accepted:item-001"}
	tests := []struct {
		name string
		h    subject.History
		want []string
	}{
		{"each item once", subject.History{Items: 2, Steps: []subject.Step{crash, rec(send(1, "item-001", "accepted", 0), send(2, "item-002", "accepted", 0))}}, nil},
		{"rerun resent item 1", subject.History{Items: 2, Steps: []subject.Step{crash, rec(send(1, "item-001", "accepted", 0), send(2, "item-001", "accepted", 0), send(3, "item-002", "accepted", 0))}}, []string{"each-item-sent-once"}},
		{"item 2 never sent", subject.History{Items: 2, Steps: []subject.Step{crash, rec(send(1, "item-001", "accepted", 0))}}, []string{"each-item-sent-once"}},
		{"a refused send is not a delivery", subject.History{Items: 1, Steps: []subject.Step{crash, rec(send(1, "item-001", "stale", 1), send(2, "item-001", "accepted", 2))}}, nil},
		{"final run failed", subject.History{Items: 1, Steps: []subject.Step{crash, {Role: subject.RoleRecovery, ExitCode: 3, Rows: subject.State{TableSends: []string{send(1, "item-001", "accepted", 0)}}}}}, []string{"recovery-acknowledged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, violated(t, tt.h, invs)); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
	st := subject.Params{Items: 2}
	for _, tt := range []struct {
		sends []string
		want  string
	}{
		{[]string{send(1, "item-001", "accepted", 0), send(2, "item-002", "accepted", 0)}, subject.OutcomeClean},
		{[]string{send(1, "item-001", "accepted", 0), send(2, "item-001", "accepted_no_reply", 0), send(3, "item-002", "accepted", 0)}, Duplicates(1)},
		{[]string{send(1, "item-001", "accepted", 0)}, "duplicates-0-lost-1"},
	} {
		if got := classifyBatch(st, subject.State{TableSends: tt.sends}); got != tt.want {
			t.Errorf("classifyBatch(%v) = %s, want %s", tt.sends, got, tt.want)
		}
	}
}

// TestClaimInvariants: wins inside one TTL, and downstream fields lost or
// overwritten, are caught; a re-claim after the TTL is not.
func TestClaimInvariants(t *testing.T) {
	invs := Claim().Invariants
	row := func(count int, at string, class, ext string) subject.State {
		return subject.State{TableClaims: []string{fmt.Sprintf("fp|%d|%s|%s|%s", count, at, class, ext)}}
	}
	step := func(role string, s subject.State) subject.Step { return subject.Step{Role: role, Rows: s} }
	crash := func(s subject.State) subject.Step {
		return subject.Step{Role: subject.RoleDelivery, ExitCode: 17, Rows: s}
	}
	tests := []struct {
		name string
		h    subject.History
		want []string
	}{
		{"crash after the claim, re-claim after the TTL", subject.History{Steps: []subject.Step{crash(row(1, "1000", "", "")), step(RoleProbe, row(1, "1000", "", "")), step(subject.RoleRecovery, row(2, "61001", "c", "ext-recovery"))}}, nil},
		{"probe wins inside the TTL", subject.History{Steps: []subject.Step{crash(row(1, "1000", "", "")), step(RoleProbe, row(2, "1500", "c", "ext-probe")), step(subject.RoleRecovery, row(3, "70000", "c", "ext-probe"))}}, []string{"one-winner-per-ttl"}},
		{"re-claim exactly at the TTL", subject.History{Steps: []subject.Step{crash(row(1, "1000", "", "")), step(subject.RoleRecovery, row(2, "61000", "c", "ext-recovery"))}}, []string{"one-winner-per-ttl"}},
		{"downstream overwritten", subject.History{Steps: []subject.Step{step(subject.RoleDelivery, row(1, "1000", "c", "ext-delivery")), step(subject.RoleRecovery, row(2, "70000", "c", "ext-recovery"))}}, []string{"downstream-kept"}},
		{"downstream cleared", subject.History{Steps: []subject.Step{step(subject.RoleDelivery, row(1, "1000", "c", "ext-delivery")), step(subject.RoleRecovery, row(2, "70000", "", ""))}}, []string{"downstream-kept", "downstream-written"}},
		{"never done", subject.History{Steps: []subject.Step{crash(row(1, "1000", "", "")), step(subject.RoleRecovery, row(1, "1000", "", ""))}}, []string{"downstream-written"}},
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
func leaseState(log []string, sends ...string) subject.State {
	return subject.State{
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
	invs := Lease().Invariants
	base := []string{
		logRow(1, "grant", "a", 1, "", "", 1000),
		logRow(2, "write", "a", 1, "item-001", "IN_FLIGHT", 1010),
	}
	takeover := append(append([]string{}, base...),
		logRow(3, "grant", "b", 2, "", "", 1400),
		logRow(4, "write", "b", 2, "item-001", "IN_FLIGHT", 1401),
		logRow(5, "write", "b", 2, "item-001", "SUCCEEDED", 1402))
	stale := append(append([]string{}, takeover...), logRow(6, "write", "a", 1, "item-001", "SUCCEEDED", 1500))
	two := func(s subject.State) subject.History {
		return subject.History{Items: 1, Steps: []subject.Step{{Role: "successor", Rows: s}, {Role: subject.RoleRecovery, Rows: s}}}
	}
	tests := []struct {
		name string
		h    subject.History
		want []string
	}{
		{"fenced: the late send is refused and logged", two(leaseState(takeover, send(1, "item-001", "accepted", 2), send(2, "item-001", "stale", 1))), nil},
		{"unfenced: the late send lands and the row is overwritten", two(leaseState(stale, send(1, "item-001", "accepted", 2), send(2, "item-001", "accepted", 1))),
			[]string{"each-item-sent-once", "no-stale-accept", "no-stale-journal-write"}},
		{"unfenced after the send: only the write", two(leaseState(stale, send(1, "item-001", "accepted", 1))), []string{"no-stale-journal-write"}},
		{"takeover inside the TTL", two(leaseState([]string{logRow(1, "grant", "a", 1, "", "", 1000), logRow(2, "grant", "b", 2, "", "", 1200), logRow(3, "write", "b", 2, "item-001", "SUCCEEDED", 1201)}, send(1, "item-001", "accepted", 2))),
			[]string{"no-overlapping-holders"}},
		{"journal left unfinished", subject.History{Items: 2, Steps: []subject.Step{{Role: subject.RoleRecovery, Rows: leaseState(takeover, send(1, "item-001", "accepted", 2), send(2, "item-002", "accepted", 2))}}}, []string{"journal-complete", "journal-complete", "journal-complete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, violated(t, tt.h, invs)); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
	if got := classifyLease(subject.Params{Items: 1}, leaseState(stale, send(1, "item-001", "accepted", 2), send(2, "item-001", "accepted", 1))); got != takeoverModel()[0] {
		t.Errorf("the unfenced takeover before a send classifies as %s, want %s", got, takeoverModel()[0])
	}
}

// rows makes a redelivery state with j jobs and p processed records.
func rows(j, p int) subject.State {
	s := subject.State{TableJobs: []string{}, TableProcessed: []string{}}
	for range j {
		s[TableJobs] = append(s[TableJobs], "e|k")
	}
	for range p {
		s[TableProcessed] = append(s[TableProcessed], "e")
	}
	return s
}

// TestInvariants judges hand-made histories: what a crash, a kill or a
// race could leave, and what no correct run can.
func TestInvariants(t *testing.T) {
	invs := Redelivery(wr.SeparateCommit).Invariants
	crash := func(at string, r subject.State) subject.Step {
		return subject.Step{Role: subject.RoleDelivery, ExitCode: 17, CrashedAt: at, Rows: r}
	}
	killed := func(r subject.State) subject.Step {
		return subject.Step{Role: subject.RoleDelivery, ExitCode: -1, Signal: "killed", Rows: r}
	}
	ack := func(role string, r subject.State) subject.Step { return subject.Step{Role: role, Rows: r} }
	tests := []struct {
		name string
		h    subject.History
		want []string
	}{
		{"crash before commit, clean recovery", subject.History{Steps: []subject.Step{crash("after-job-insert", rows(0, 0)), ack(subject.RoleRecovery, rows(1, 1))}}, nil},
		{"crash between commits duplicates the job", subject.History{Steps: []subject.Step{crash("after-job-commit", rows(1, 0)), ack(subject.RoleRecovery, rows(2, 1))}}, []string{"one-job"}},
		{"kill before start", subject.History{Steps: []subject.Step{killed(rows(0, 0)), ack(subject.RoleRecovery, rows(1, 1))}}, nil},
		{"recovery that fails", subject.History{Steps: []subject.Step{crash("x", rows(0, 0)), {Role: subject.RoleRecovery, ExitCode: 3, Rows: rows(0, 0)}}}, []string{"one-job", "one-processed-record", "recovery-acknowledged"}},
		{"acknowledged with no work done", subject.History{Steps: []subject.Step{ack(subject.RoleDelivery, rows(0, 1)), ack(subject.RoleRecovery, rows(1, 1))}}, []string{"ack-leaves-work-done"}},
		{"processed record lost", subject.History{Steps: []subject.Step{ack(subject.RoleDelivery, rows(1, 1)), ack(subject.RoleRecovery, rows(1, 0))}}, []string{"one-processed-record", "ack-leaves-work-done"}},
		{"racers with a duplicate", subject.History{Steps: []subject.Step{ack(subject.RoleRacer, rows(2, 1)), ack(subject.RoleRacer, rows(2, 1)), ack(subject.RoleRecovery, rows(2, 1))}}, []string{"one-job"}},
		{"last step is not a recovery", subject.History{Steps: []subject.Step{ack(subject.RoleRacer, rows(1, 1))}}, []string{"recovery-acknowledged"}},
		{"empty history", subject.History{}, []string{"one-job", "one-processed-record", "recovery-acknowledged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range subject.Check(tt.h, invs) {
				got = append(got, v.Invariant)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		s    subject.State
		want string
	}{{rows(1, 1), subject.OutcomeClean}, {rows(2, 1), "duplicate-2"}, {rows(8, 1), "duplicate-8"}, {rows(0, 0), "jobs-0-processed-0"}, {rows(1, 0), "jobs-1-processed-0"}} {
		if got := classifyRedelivery(tt.s); got != tt.want {
			t.Errorf("classify %v = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// sent is a receiver log row of a notification of item n, accepted, from
// sender tok; an empty tok gives the six-field row of format 4.
func sent(seq, n int, tok string) string {
	e := receiver.Entry{Seq: seq, Item: wb.ItemID(n), Step: wb.StepNotify, Outcome: receiver.SendAccepted, Receipt: fmt.Sprintf("rcpt-%d", seq), Sender: tok}
	r := subject.SendRow(e)
	if tok == "" {
		r = strings.TrimSuffix(r, "|")
	}
	return r
}

func sendState(rows ...string) subject.State { return subject.State{TableSends: rows} }

// runReport is a rerun-all run's result that says it sent n notifications.
func runReport(tb testing.TB, st subject.Params, n int) json.RawMessage {
	b, err := json.Marshal(wb.RunResult{Mode: wb.ModeRerunAll, JobID: st.JobKey, Items: st.Items, Outcome: wb.Outcome{
		Status: wb.StatusCompleted, ExecutedSteps: 3 * n, Held: []string{},
		Executed: map[string]int{wb.StepValidate: n, wb.StepTransform: n, wb.StepNotify: n},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestAccountCountsBySender: a run's sends are the ones its sender token
// names, over the trial's whole log, whenever they landed; a folder
// without tokens keeps the old reading, the accepts logged while it ran.
func TestAccountCountsBySender(t *testing.T) {
	st := subject.Params{JobKey: "k-1", Items: 2}
	pat := Batch(wb.ModeRerunAll)
	// The delivery p1 was killed with item-002's send in flight; the
	// parent read the log (one row) and started the recovery p2, and the
	// receiver logged p1's send while p2 ran.
	delivery := sendState(sent(1, 1, "p1"))
	late := sendState(sent(1, 1, "p1"), sent(2, 2, "p1"), sent(3, 1, "p2"), sent(4, 2, "p2"))
	tests := []struct {
		name          string
		sender        string
		claim         int
		before, after subject.State
		want          []string
	}{
		{"late send of the killed sender not charged to the recovery", "p2", 2, delivery, late, nil},
		{"a claim beyond the sender's sends", "p2", 3, delivery, late, []string{"the run says it sent 3 notifications, the receiver accepted 2 from its sender p2"}},
		{"a send of no known sender counts for nobody", "p2", 2, delivery, sendState(sent(1, 1, "p1"), sent(2, 1, wire.SenderUnknown), sent(3, 1, "p2"), sent(4, 2, "p2")), nil},
		// The same trial as format 4 recorded it: without tokens only the
		// time window is left, and it charges the late send to p2.
		{"format 4: the window", "", 2, sendState(sent(1, 1, "")), sendState(sent(1, 1, ""), sent(2, 2, ""), sent(3, 1, ""), sent(4, 2, "")),
			[]string{"the run says it sent 2 notifications, the receiver accepted 3 while it ran"}},
		{"format 4: a window that holds the run's sends alone", "", 2, sendState(sent(1, 1, ""), sent(2, 2, "")), sendState(sent(1, 1, ""), sent(2, 2, ""), sent(3, 1, ""), sent(4, 2, "")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pat.Account(st, subject.RoleRecovery, tt.sender, runReport(t, st, tt.claim), tt.before, tt.after)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Account (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTablesReadOn: each subject that another scenario reads through a
// store (durability, on either backend) makes its tables with Tables and
// lists every one of them with ReadOn, empty on a fresh database.
func TestTablesReadOn(t *testing.T) {
	tests := []struct {
		sub  subject.Subject
		want subject.State
	}{
		{Redelivery(wr.SeparateCommit), subject.State{TableJobs: {}, TableProcessed: {}}},
		{Redelivery(wr.SingleTransaction), subject.State{TableJobs: {}, TableProcessed: {}}},
		{Claim(), subject.State{TableClaims: {}}},
		{Batch(wb.ModeJournal), subject.State{TableJournal: {}}},
	}
	for _, tt := range tests {
		t.Run(tt.sub.Name, func(t *testing.T) {
			if tt.sub.Tables == nil || tt.sub.ReadOn == nil {
				t.Fatalf("Tables set %v, ReadOn set %v: want both", tt.sub.Tables != nil, tt.sub.ReadOn != nil)
			}
			ctx := context.Background()
			st, err := store.OpenSQLite(ctx, sqlitedb.Options{Path: filepath.Join(t.TempDir(), "t.sqlite3")})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.ExecContext(ctx, tt.sub.Tables(store.SQLite{})); err != nil {
				t.Fatalf("Tables: %v", err)
			}
			got, err := tt.sub.ReadOn(ctx, st)
			if err != nil {
				t.Fatalf("ReadOn: %v", err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ReadOn on a fresh database (-want +got):\n%s", d)
			}
		})
	}
}
