package syncmodel

import (
	"maps"
	"slices"
	"strings"

	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
)

// How a trial's record names what the model takes: a cut inside a sync
// by its point's name, and the views a torn cut took by the VFS's
// recorded decisions.

// ParseSyncPoint reads a sync point's name, "sync-N-before" or
// "sync-N-after"; ok is false for any other point.
func ParseSyncPoint(point string) (protocol.SyncCut, bool) {
	rest, ok := strings.CutPrefix(point, "sync-")
	if !ok {
		return protocol.SyncCut{}, false
	}
	n, when, ok := strings.Cut(rest, "-")
	c, err := protocol.ParseSyncCut(n + ":" + when)
	if !ok || err != nil || c.Point() != point {
		return protocol.SyncCut{}, false
	}
	return c, true
}

// View letters in a view key.
var viewLetters = map[View]string{ViewDrop: "d", ViewKeep: "k", ViewTorn: "t"}

// Key names a combination of file views: "file=letter" for every file a
// torn cut decided, the file named by the database's name db and the
// model's suffix ("-wal"), sorted, joined by spaces; "" when it decided
// none. KeyOf builds the same key from the recorded decisions.
func Key(db string, v Views) string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, db+f+"="+viewLetters[v[f]])
	}
	return strings.Join(parts, " ")
}

// ViewOf reads one file's torn decisions as a view: every unit kept, every
// unit dropped, or torn.
func ViewOf(decisions string) View {
	switch {
	case strings.Trim(decisions, string(rune(faultvfs.DecideKeep))) == "":
		return ViewKeep
	case strings.Trim(decisions, string(rune(faultvfs.DecideDrop))) == "":
		return ViewDrop
	}
	return ViewTorn
}

// KeyOf is the Key of a torn recovery's decisions, for the files of the
// database db.
func KeyOf(db string, torn []faultvfs.TornFile) string {
	v := Views{}
	for _, tf := range torn {
		v[strings.TrimPrefix(tf.Name, db)] = ViewOf(tf.Decisions)
	}
	return Key(db, v)
}
