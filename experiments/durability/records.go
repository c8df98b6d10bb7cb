package durability

import (
	"maps"
	"slices"

	"idemlab/experiments/backend"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/receiver"
	wb "idemlab/worker/batch"
	"idemlab/worker/faultvfs"
	wr "idemlab/worker/redelivery"
)

// File names inside a trial's folder.
const (
	DBRedelivery = "events.sqlite3"
	DBBatch      = "journal.sqlite3"
)

// DBName is a pattern's file name inside a trial's folder.
func DBName(pattern string) string {
	switch pattern {
	case PatternBatch:
		return DBBatch
	case PatternClaim:
		return DBClaims
	}
	return DBRedelivery
}

// Roles of the processes of a trial, in order.
const (
	RoleFirst   = "first"   // the process that crashes or ACKs before the cut
	RoleSecond  = "second"  // the redelivery, or the batch's resume
	RoleResolve = "resolve" // a batch resolve of a held send
	RoleThird   = "third"   // the batch run after the resolves
)

// Observation is one trial: one line of observations.jsonl.
type Observation struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	// Point is the crash point of the first process, or PointACK,
	// PointACKOpen, PointACKReader, or a cut inside a sync.
	Point string `json:"point"`
	// Seed is the index of the trial's seed under the torn mode (the seed
	// itself is Settings.Seed plus it); absent otherwise.
	Seed *int `json:"seed_index,omitempty"`
	// DB is the trial's database; each trial has its own folder.
	DB string `json:"db"`
	// Receiver is the batch trial's receiver URL.
	Receiver string `json:"receiver,omitempty"`
	Steps    []Step `json:"steps"`
	// Before is what the first process left as a kill leaves it: read by
	// the parent from a copy of the folder, before any cut.
	Before Rows `json:"before"`
	// Log is faultvfs's op log as the first process left it: what the cut
	// is replayed from. Recovery is faultvfs's report of the cut, absent
	// for a kill; its own copy of the log is left out, as it is this one.
	Log      []faultvfs.Op    `json:"log"`
	Recovery *faultvfs.Report `json:"recovery,omitempty"`
	// FS is a power cut's record on the fs layer (--power-layer fs), in
	// place of Recovery: the mount the first process ran on, and the
	// powerfs op log and outcome the cut left, which the fold derives
	// again (powerlayer.Check). The VFS's Log is kept too: the workers
	// still open their file through it, and it only logs.
	FS *powerlayer.MountCut `json:"fs,omitempty"`
	// After is what the next process finds, and Integrity what PRAGMA
	// integrity_check said about it.
	After     Rows     `json:"after"`
	Integrity []string `json:"integrity"`
	// Final is the file after the trial's last process.
	Final Rows `json:"final"`
	// Sends is the batch receiver's whole log for the trial.
	Sends []receiver.Entry `json:"sends,omitempty"`
	// Server is a server crash's record on PostgreSQL; absent for a kill
	// and on SQLite, where DB is a file. On PostgreSQL DB is the trial's
	// connection string, naming a schema of its own, Log is null and
	// Integrity is what amcheck said of the tables after recovery.
	Server *ServerCrash `json:"server,omitempty"`
	// PGPower is a PostgreSQL power cut's record (backend.PowerTrial): the
	// server's settings, the mount's op log and the cut derived from it,
	// and what the recovered server showed. DB then names the trial's own
	// cluster, whose data folder was on the mount.
	PGPower *backend.PowerOutcome `json:"pg_power,omitempty"`
	// SyncWindow is, on the normal run of a PostgreSQL power condition
	// with sync_points, the mount's fsyncs once Setup had returned (from)
	// and once the first process had ended (to): the sweep cuts at each
	// N past from up to to (backend.SyncWindow). Absent on every other
	// trial.
	SyncWindow *backend.SyncWindow `json:"sync_window,omitempty"`
}

// ServerCrash is what the parent saw of a crash of the PostgreSQL server
// between the first process and the next.
type ServerCrash struct {
	// Frozen says the WAL writer and background writer were stopped
	// (SIGSTOP) before the first process started and stayed so until the
	// crash.
	Frozen bool `json:"writers_frozen"`
	// Settings are backend.CrashSettings as the recovered server read
	// them back.
	Settings map[string]string `json:"settings"`
	// Lost are the rows of Before that After lacks, per table: the
	// committed work the crash took back, as the parent read it.
	Lost Rows `json:"lost_rows"`
}

// Step is one process of a trial.
type Step struct {
	Role      string `json:"role"`
	ProcessID int    `json:"process_id"`
	// Lookup is what the parent asked the receiver before a resolve.
	Lookup *wb.Lookup `json:"lookup,omitempty"`
}

// Rows are a file's rows per table, each rendered as "col|col|...", in the
// table's order.
type Rows map[string][]string

// Lines renders the rows as "table: row", tables in name order.
func (r Rows) Lines() []string {
	var out []string
	for _, tb := range slices.Sorted(maps.Keys(r)) {
		for _, row := range r[tb] {
			out = append(out, tb+": "+row)
		}
	}
	return out
}

// Table names in Rows.
const (
	TableJobs      = wr.TableJobs
	TableProcessed = wr.TableProcessed
	TableJournal   = "step_journal"
)

// syncWindow is the window of syncs trial o's first process made: the
// recorded one on PostgreSQL, else from 0 to its syncs.
func (o Observation) syncWindow() backend.SyncWindow {
	if o.SyncWindow != nil {
		return *o.SyncWindow
	}
	return backend.SyncWindow{To: o.syncs()}
}

// syncs counts the syncs of trial o that the sweep's sync points number:
// the mount's fsyncs on the fs layer (the cut's outcome counts them), the
// VFS's xSyncs otherwise.
func (o Observation) syncs() int {
	if o.FS != nil {
		return o.FS.Outcome.Syncs
	}
	return faultvfs.Syncs(o.Log)
}
