package syncmodel

import (
	"testing"

	"idemlab/worker/faultvfs"
)

func TestParseSyncPoint(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{{"sync-3-before", true}, {"sync-12-after", true}, {"sync-0-after", false}, {"sync-3-during", false}, {"sync-03-after", false}, {"ack", false}} {
		if _, ok := ParseSyncPoint(tt.in); ok != tt.ok {
			t.Errorf("ParseSyncPoint(%q) ok %v", tt.in, ok)
		}
	}
}

func TestViewOf(t *testing.T) {
	for in, want := range map[string]View{"kkk": ViewKeep, "dd": ViewDrop, "kd": ViewTorn, "g": ViewTorn} {
		if got := ViewOf(in); got != want {
			t.Errorf("ViewOf(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestKeyOf(t *testing.T) {
	got := KeyOf("events.sqlite3", []faultvfs.TornFile{{Name: "events.sqlite3-wal", Decisions: "kkk"}, {Name: "events.sqlite3", Decisions: "kdg"}})
	if want := "events.sqlite3=t events.sqlite3-wal=k"; got != want {
		t.Errorf("KeyOf = %q, want %q", got, want)
	}
}
