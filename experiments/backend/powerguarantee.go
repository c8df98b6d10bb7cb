package backend

import (
	"slices"

	"idemlab/experiments/results"
	"idemlab/worker/powerfs"
)

// What a PostgreSQL power cut may leave, from the trial's settings alone:
// the guarantee every scenario's oracle of a power trial on PostgreSQL
// starts from (PostgreSQL's documentation, "WAL Configuration" and
// "Reliability"):
//
//	fsync=on, synchronous_commit=on:  every commit the worker made survives
//	                                  (its WAL was flushed before it returned)
//	fsync=on, synchronous_commit=off: drop loses every commit after Setup,
//	                                  ACKed or not: the WAL writer flushed
//	                                  at Setup and is quiet for 10 s
//	                                  (PowerQuiet), and the trial must come
//	                                  inside them (quiet_held); torn keeps
//	                                  a prefix of them, any length
//	fsync=off:                        anything, the tables themselves, or a
//	                                  server that does not start; under
//	                                  drop at least every commit of the
//	                                  first process is lost (nothing is
//	                                  ever synced, so the cut gives back
//	                                  the folder the mount started on)
//	full_page_writes=off under torn:  a page the checksums reject may also
//	                                  come (corrupt)
//
// and nothing else may be corrupt.

// OnOff are fsync's and full_page_writes' values, on first.
var OnOff = []string{"on", "off"}

// PowerModels are the models of a PostgreSQL power cut, on the
// power-loss filesystem.
var PowerModels = []string{powerfs.ModelDrop, powerfs.ModelTorn}

// WalSyncMethods are wal_sync_method's values on Linux; empty is the
// server's default, fdatasync.
var WalSyncMethods = []string{"fdatasync", "fsync", "open_datasync", "open_sync"}

// PowerKeeps is what a power cut may leave of the commits a trial's
// first process made.
type PowerKeeps struct {
	// Kept are the numbers of those commits the recovered server may
	// hold, ascending; a prefix of them, as the WAL is replayed in order.
	Kept []int
	// Anything says fsync is off: the cut may also take what came before
	// them, the tables themselves, or leave a server that does not start.
	Anything bool
	// Corrupt says a page the checksums reject may come.
	Corrupt bool
}

// Keeps is what a power cut under model (powerfs.ModelDrop or ModelTorn)
// may leave of made commits, under the server settings s (the table
// above).
func Keeps(s PowerSettings, model string, made int) PowerKeeps {
	upTo := func(n int) []int {
		out := make([]int, 0, n+1)
		for k := 0; k <= n; k++ {
			out = append(out, k)
		}
		return out
	}
	torn := model == powerfs.ModelTorn
	switch {
	case s.Fsync == "off" && !torn:
		return PowerKeeps{Kept: []int{0}, Anything: true, Corrupt: true}
	case s.Fsync == "off":
		return PowerKeeps{Kept: upTo(made), Anything: true, Corrupt: true}
	}
	k := PowerKeeps{Kept: []int{made}, Corrupt: torn && s.FullPageWrites == "off"}
	if s.SynchronousCommit == "off" {
		k.Kept = []int{0}
		if torn {
			k.Kept = upTo(made)
		}
	}
	return k
}

// FoldPower has checker c check power trial record o, on observation line
// l, against the trial's server settings want and cut models p
// (PowerOutcome.Check, each mismatch named under "pg_power."), and the
// postmaster its cut ended (FoldPostmaster). Every fold of a PostgreSQL
// power trial calls it.
// quiet are the quiet settings the run's record says every power trial's
// server ran with (PowerQuiet when it was made): o's must be them, and the
// cut must have come inside the WAL writer's quiet.
func FoldPower(c *results.Checker, r results.Records, l results.Line, o PowerOutcome, want PowerSettings, p powerfs.Params, quiet []string) {
	for _, m := range o.Check(want, p) {
		c.Obs(l, "pg_power."+m.Field, "%s", m.Text)
	}
	FoldPostmaster(c, r, l, o, want)
	if !slices.Equal(o.Quiet, quiet) {
		c.Obs(l, "pg_power.quiet", "%v, but the settings run every power trial's server with %v", o.Quiet, quiet)
	}
	if !o.QuietHeld {
		c.Obs(l, "pg_power.quiet_held", "false: the cut came after wal_writer_delay, so the WAL writer's flush, not the settings, may have decided what survived")
	}
}

// PowerCell is one cell of a PostgreSQL power sweep: the server settings
// (but wal_sync_method, one value for a run) and the cut's model.
type PowerCell struct {
	PowerSettings
	Model string
}

// Name is the cell as durability's conditions and tables name it: its
// settings' Name, then the model ("fsync=on,…,full_page_writes=on,drop").
func (c PowerCell) Name() string { return c.PowerSettings.Name() + "," + c.Model }

// PowerCells lists the cells of fsync × synchronous_commit ×
// full_page_writes × model in table order: fsync, full_page_writes and
// model in their known lists' order (OnOff, PowerModels), each kept only
// where the given list holds it, and synchronous_commit in scs's order.
func PowerCells(fsync, scs, fpw, models []string) []PowerCell {
	var out []PowerCell
	for _, fs := range OnOff {
		for _, sc := range scs {
			for _, fp := range OnOff {
				for _, m := range PowerModels {
					if slices.Contains(fsync, fs) && slices.Contains(fpw, fp) && slices.Contains(models, m) {
						out = append(out, PowerCell{PowerSettings{Fsync: fs, SynchronousCommit: sc, FullPageWrites: fp}, m})
					}
				}
			}
		}
	}
	return out
}
