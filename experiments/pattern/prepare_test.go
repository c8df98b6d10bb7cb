package pattern

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	wp "idemlab/worker/pattern"
	"idemlab/worker/sqlitedb"
)

// TestPrepareOptions shows the parent's set-up of a trial's file skips
// the fsyncs only where no trial can lose what it wrote: a process crash
// keeps the page cache, a power cut does not, so a power trial keeps the
// condition's synchronous; every trial keeps its journal mode, which a
// WAL file carries in itself.
func TestPrepareOptions(t *testing.T) {
	cond := sqlitedb.Options{Path: "p.sqlite3", JournalMode: "WAL", Synchronous: "FULL"}
	tests := []struct {
		fault string
		want  string
	}{
		{wp.FaultPoints, "OFF"},
		{wp.FaultRandom, "OFF"},
		{wp.FaultConcurrent, "OFF"},
		{FaultNone, "OFF"},
		{wp.FaultPower, "FULL"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			want := cond
			want.Synchronous = tt.want
			got := prepareOptions(cond, Condition{Name: "x/" + tt.fault, Fault: tt.fault})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("prepareOptions (-want +got):\n%s", diff)
			}
		})
	}
}
