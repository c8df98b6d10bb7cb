package claim

import (
	"slices"
	"testing"

	"idemlab/experiments/results"
)

// TestRetriesAreMeasurements: the retries the racers needed, SQLite's and
// PostgreSQL's alike, are declared measurements, so verify --rerun leaves
// them out; under REPEATABLE READ and SERIALIZABLE their count changes from
// run to run, and a rerun that compared them would fail a folder that
// reproduces.
func TestRetriesAreMeasurements(t *testing.T) {
	m := &results.Measures{}
	m.Mark(Extra{
		BusyRetries:          map[string]int{"c": 1},
		SerializationRetries: map[string]int{"c": 1},
		DeadlockRetries:      map[string]int{"c": 1},
	}, "extra")
	got := m.Paths()
	for _, want := range []string{"extra.busy_retries", "extra.serialization_retries", "extra.deadlock_retries"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not a declared measurement; the measurements are %v", want, got)
		}
	}
}
