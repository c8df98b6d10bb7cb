package backend

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// The fsync sweep of a PostgreSQL power trial (issue 29: "before and
// after the N-th fsync of any process on the mount, swept over the N that
// a discovery run saw"). The mount counts every fsync from its start, the
// server's start and Setup's among them, and a cut that falls inside the
// start fails StartPowerCluster; so a discovery trial reads the count
// once Setup has returned (From) and once the delivery has ended (To),
// and the sweep cuts just before and just after each N in From+1..To
// (PowerConfig.CutSync, CutAfter). A trial's record then holds its N
// (the logged cut op), which powerfs.Plan derives again with the rest of
// the cut.
//
// What such a cut may leave comes from the settings alone
// (SweepWantOf), by PostgreSQL's documented guarantees: with fsync and
// synchronous_commit on no ACKed commit is lost and nothing is corrupt,
// whatever N; with synchronous_commit off the last ACKed commits may be
// lost, but the cluster starts and is consistent; with fsync off anything
// may come, a server that does not start too; full_page_writes off under
// torn may leave a page the checksums reject.
//
// One exception the sweep found (TestPowerSyncSweep): PostgreSQL writes
// the WAL in whole pages, so each flush rewrites the last, partly filled
// page, records already durable and ACKed in it included. A torn cut
// before such a flush that garbles a unit of that rewrite destroys those
// records: the WAL's CRC stops recovery before them, and commits that
// were ACKed under fsync and synchronous_commit on are lost. The promise
// holds for a disk that never garbles a sector it rewrites (drop, keep,
// and torn's keep/drop decisions); the oracle allows the loss exactly
// when the recorded cut garbled a unit of a WAL segment's overwritten
// durable bytes (GarbledWALRewrite), which powerfs.Plan derives again
// from the op log and the seed. Every cut of the sweep
// comes before the delivery's ACK, or between its commits, so what was
// never ACKed may survive or not.

// SyncWindow is the span of a power trial's mount's fsyncs that one
// delivery made: From, the count once Setup returned; To, the count when
// the delivery had ended.
type SyncWindow struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Cuts lists the sweep's cuts, just before and just after each fsync of
// the window, in order; none for an empty window.
func (w SyncWindow) Cuts() []protocol.SyncCut {
	var out []protocol.SyncCut
	for n := w.From + 1; n <= w.To; n++ {
		out = append(out, protocol.SyncCut{N: n}, protocol.SyncCut{N: n, After: true})
	}
	return out
}

// Check says what is wrong with a window a discovery recorded on a server
// with settings s: a start the sweep cannot cut inside is at least one
// fsync (the server's start syncs its control file), but with fsync off,
// where PostgreSQL syncs nothing and the window is empty; and a
// delivery's end is not before its start.
func (w SyncWindow) Check(s PowerSettings) error {
	switch {
	case s.Fsync == "off" && w.To != 0:
		return fmt.Errorf("to %d: with fsync off PostgreSQL syncs nothing on the mount", w.To)
	case s.Fsync == "off":
		return nil
	case w.From < 1:
		return fmt.Errorf("from %d: the server's start and Setup sync at least once on the mount", w.From)
	case w.To < w.From:
		return fmt.Errorf("to %d is before from %d", w.To, w.From)
	}
	return nil
}

// SweepWant is what a cut inside a delivery may leave of a power trial's
// cluster, from its settings and model alone.
type SweepWant struct {
	// MustStart: the server starts on the rebuilt folder (fsync on).
	MustStart bool
	// KeepsACKed: every commit ACKed before the cut survives (fsync and
	// synchronous_commit on).
	KeepsACKed bool
	// MayCorrupt: amcheck or the checksums may reject a page (fsync off,
	// or full_page_writes off under torn).
	MayCorrupt bool
	// Torn: the cut may garble a rewritten WAL page, and with it the
	// ACKed records in it (GarbledWALRewrite).
	Torn bool
	// Anything: fsync off, nothing at all is promised of the rows.
	Anything bool
}

// SweepWantOf is the oracle of a cut inside a delivery on a server with
// settings s, under model (drop, keep or torn).
// What may be corrupt, and whether anything goes, is the power cut's
// guarantee (Keeps); only the ACKed commits differ, since a cut inside the
// delivery may come before the last of them.
func SweepWantOf(s PowerSettings, model string) SweepWant {
	k := Keeps(s, model, 0)
	if k.Anything {
		return SweepWant{MayCorrupt: true, Anything: true}
	}
	return SweepWant{MustStart: true, KeepsACKed: s.SynchronousCommit != "off", MayCorrupt: k.Corrupt, Torn: model == powerfs.ModelTorn}
}

// Judge lists where outcome o breaks w: rows are the ids the recovered
// server read back (o.Rows), acked the ids whose commits were ACKed
// before the cut, and maybe those sent but never ACKed, which may survive
// or not. Under any setting but fsync off, a row that was never written
// is a violation too. It returns nil when o is allowed.
func (w SweepWant) Judge(o PowerOutcome, acked, maybe []string) []string {
	if w.Anything {
		return nil
	}
	var out []string
	if !o.Started {
		if w.MustStart {
			out = append(out, "the server did not start on the rebuilt folder")
		}
		return out
	}
	if o.RowsErr != "" {
		out = append(out, "the rows could not be read: "+o.RowsErr)
	}
	keeps := w.KeepsACKed && !(w.Torn && GarbledWALRewrite(o.Cut))
	for _, id := range acked {
		if keeps && !slices.Contains(o.Rows, id) {
			out = append(out, fmt.Sprintf("ACKed row %s was lost", id))
		}
	}
	for _, id := range o.Rows {
		if !slices.Contains(acked, id) && !slices.Contains(maybe, id) {
			out = append(out, fmt.Sprintf("row %s survived, but it was never written", id))
		}
	}
	if o.Corrupt() && !w.MayCorrupt {
		out = append(out, fmt.Sprintf("the cluster is damaged: %v", o.Damage()))
	}
	return out
}

// GarbledWALRewrite says whether cut c garbled a unit of a WAL segment
// (pg_wal/) that overwrote durable bytes: a file whose unsynced spans
// have pre-images (Undo) and a garbled decision. It is coarse by the unit:
// a garbled unit of the file's appended bytes next to an overwrite counts
// too.
func GarbledWALRewrite(c powerfs.Outcome) bool {
	for _, f := range c.Files {
		if strings.HasPrefix(f.Path, "pg_wal/") && len(f.Undo) > 0 && strings.Contains(f.Decisions, "g") {
			return true
		}
	}
	return false
}

// CheckAt checks window w as the discovery trial that recorded it, on a
// server with settings s, was cut after its delivery, leaving c: w itself
// (Check, field "from" or
// "to"), and its end, the fsyncs the mount had made once the delivery had
// ended, which is the cut's count (c.Syncs): with PowerQuiet nothing on
// the mount syncs between the delivery's end and the cut.
func (w SyncWindow) CheckAt(s PowerSettings, c powerfs.Outcome) (field, text string) {
	if err := w.Check(s); err != nil {
		if w.From < 1 && s.Fsync != "off" {
			return "from", err.Error()
		}
		return "to", err.Error()
	}
	if w.To != c.Syncs {
		return "to", fmt.Sprintf("%d, but the discovery's cut after its delivery counted %d fsyncs on the mount", w.To, c.Syncs)
	}
	return "", ""
}

// CheckSweepCut checks that cut c, a sweep trial's, fell where its sync
// cut sc says: the logged cut op at sc's fsync, before or after it.
func CheckSweepCut(c powerfs.Outcome, sc protocol.SyncCut) (field, text string) {
	at := map[bool]string{false: "before", true: "after"}[sc.After]
	if op := c.Cut; op == nil || op.Kind != powerfs.OpCut || op.Sync != sc.N || op.At != at {
		got := "none"
		if op != nil {
			got = fmt.Sprintf("%s fsync %d", op.At, op.Sync)
		}
		return "cut.cut", fmt.Sprintf("%s, but a cut at %s falls %s the mount's fsync %d", got, sc.Point(), at, sc.N)
	}
	return "", ""
}
