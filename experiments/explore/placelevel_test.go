package explore

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/pattern"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
	"idemlab/worker/store"
)

// TestPlaceLevel: an article file raced under a PostgreSQL level stands in
// the row of the file's pattern and fault, where SQLite's race of it
// stands, with the level as its setting; a SQLite file's rows are left as
// the pattern scenario placed them.
func TestPlaceLevel(t *testing.T) {
	conds := []pattern.Condition{
		{Name: "separate-commit/serializable/none", Pattern: "separate-commit/serializable", Fault: pattern.FaultNone},
		{Name: "separate-commit/serializable/concurrent", Pattern: "separate-commit/serializable", Fault: wp.FaultConcurrent},
	}
	pg := pattern.Settings{Backend: store.BackendPostgres, Postgres: &store.PGRequested{Isolation: store.Serializable.SQL()}, Conditions: conds}
	rows := map[string]scenario.Row{}
	placeLevel(rows, pg)
	want := map[string]scenario.Row{
		"separate-commit/serializable/none":       {Key: "separate-commit/none", Setting: "serializable"},
		"separate-commit/serializable/concurrent": {Key: "separate-commit/concurrent", Setting: "serializable"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	sq := pattern.Settings{Conditions: []pattern.Condition{{Name: "separate-commit/concurrent", Pattern: "separate-commit", Fault: wp.FaultConcurrent}}}
	rows = map[string]scenario.Row{}
	placeLevel(rows, sq)
	if len(rows) != 0 {
		t.Errorf("a SQLite file's rows placed: %v", rows)
	}
}
