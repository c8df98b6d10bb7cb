package review

import (
	"testing"

	"idemlab/experiments/results"
)

// TestRecordsChanged: a scenario whose records a later format changed is
// named for a folder older than that format, and only then.
func TestRecordsChanged(t *testing.T) {
	for v := range results.FormatRecords {
		for name := range results.FormatRecords[v] {
			old := &check{formatVersion: v - 1}
			if got, ok := old.recordsChanged(name); !ok || got != v {
				t.Errorf("format %d folder, scenario %s: recordsChanged = %d, %v; want %d, true", v-1, name, got, ok, v)
			}
			same := &check{formatVersion: v}
			if _, ok := same.recordsChanged(name); ok {
				t.Errorf("format %d folder, scenario %s: reported as changed by its own format", v, name)
			}
		}
	}
	if _, ok := (&check{formatVersion: 1}).recordsChanged("redelivery"); ok {
		t.Error("redelivery's records are reported as changed; no format changed them")
	}
}
