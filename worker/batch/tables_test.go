package batch

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// TestReadJournalAndHeldSends writes rows of two jobs out of key order
// through the worker's journal, then reads them with the parent's reader:
// every column, in key order, NULLs as empty; and the held sends are the
// one job's unfinished notify rows only.
func TestReadJournalAndHeldSends(t *testing.T) {
	ctx := context.Background()
	j, path := openTestJournal(t)
	marks := []struct {
		k                  wire.Key
		st                 Status
		receipt, errorType string
	}{
		{wire.Key{Job: "job-2", Item: "item-001", Step: StepNotify}, InFlight, "", ""},
		{wire.Key{Job: "job-1", Item: "item-002", Step: StepNotify}, Failed, "", "NoReply"},
		{wire.Key{Job: "job-1", Item: "item-001", Step: StepNotify}, Succeeded, "rcpt-1", ""},
		{wire.Key{Job: "job-1", Item: "item-001", Step: StepValidate}, Succeeded, "", ""},
		{wire.Key{Job: "job-1", Item: "item-003", Step: StepTransform}, InFlight, "", ""},
		{wire.Key{Job: "job-1", Item: "item-003", Step: StepNotify}, InFlight, "", ""},
	}
	for _, m := range marks {
		if err := j.Mark(ctx, m.k, m.st, "d-"+m.k.Item, m.receipt, m.errorType); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, Options(path))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := ReadJournal(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	row := func(job, item, step string, s Status, receipt, errorType string) JournalRow {
		return JournalRow{Job: job, Item: item, Step: step, Status: string(s), Digest: "d-" + item, Receipt: receipt, ErrorType: errorType}
	}
	want := []JournalRow{
		row("job-1", "item-001", StepNotify, Succeeded, "rcpt-1", ""),
		row("job-1", "item-001", StepValidate, Succeeded, "", ""),
		row("job-1", "item-002", StepNotify, Failed, "", "NoReply"),
		row("job-1", "item-003", StepNotify, InFlight, "", ""),
		row("job-1", "item-003", StepTransform, InFlight, "", ""),
		row("job-2", "item-001", StepNotify, InFlight, "", ""),
	}
	if d := cmp.Diff(want, rows, cmpopts.IgnoreFields(JournalRow{}, "UpdatedAt")); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	for _, r := range rows {
		if r.UpdatedAt <= 0 {
			t.Errorf("%s: updated_at %v", r.Key(), r.UpdatedAt)
		}
	}
	wantHeld := []wire.Key{{Job: "job-1", Item: "item-002", Step: StepNotify}, {Job: "job-1", Item: "item-003", Step: StepNotify}}
	if d := cmp.Diff(wantHeld, HeldSends(rows, "job-1")); d != "" {
		t.Errorf("held sends (-want +got):\n%s", d)
	}
}
