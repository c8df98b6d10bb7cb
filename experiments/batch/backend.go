package batch

import (
	"idemlab/experiments/backend"
	"idemlab/worker/sqlitedb"
)

// NotOnPostgres is what the SQLite run has that a PostgreSQL run cannot:
// SQLite's own settings of the journal file. Every condition runs on both.
var NotOnPostgres = []NotRun{
	{"locking_mode=EXCLUSIVE", "it is SQLite's lock on the whole journal file, which turns a second runner of the job into SQLITE_BUSY; a PostgreSQL session has no such lock, so one runner per job is the batch's own rule there (explore races the journal on PostgreSQL under each isolation level)"},
	{"journal_mode, synchronous and busy_timeout read back", "they are SQLite pragmas; each journal run's session reads back default_transaction_isolation, synchronous_commit, fsync and wal_level instead, which the fold checks against these settings"},
}

// onBackend sets st for backend b. The script, the oracle and the fold
// are the same on both: the journal's rules do not depend on the
// database for a single runner. On PostgreSQL each journal trial gets a
// schema of its own, where the runs make their table as they make their
// file on SQLite.
func onBackend(st Settings, b backend.Spec) Settings {
	if b.IsSQLite() {
		return st
	}
	st.SQLite = sqlitedb.Settings{}
	st.Backend, st.Postgres, st.NotOnPostgres = b.Name, b.Requested(), NotOnPostgres
	return st
}
