package scenario

import (
	"fmt"
	"strings"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Compared is one scenario's derived result said in a few words per
// condition, for a report that sets folders side by side: the same
// patterns on SQLite and on PostgreSQL, or under two isolation levels.
// Scenario.Compare says it as a pure function of the derived result,
// which Evaluate derived from the records, so such a report shows what
// their records give and nothing said by hand.
type Compared struct {
	// Database is the database the workers used, in the words they read
	// back from their own connections: "SQLite journal_mode=WAL
	// synchronous=NORMAL", "PostgreSQL 15.18, serializable,
	// synchronous_commit=on".
	Database string
	// Outcomes is each condition's key outcome in a few words, by the
	// condition's name.
	Outcomes map[string]string
	// Legend says how to read the outcomes, in one sentence.
	Legend string
	// Rows places a condition whose name carries a backend's own setting
	// (an isolation level, a journal mode, synchronous_commit) in the row
	// of the pattern and fault it tests, so that a SQLite folder's
	// condition and a PostgreSQL folder's stand side by side. A condition
	// it leaves out has a row of its own name.
	Rows map[string]Row
}

// Row is where a condition stands in a side-by-side report.
type Row struct {
	// Key names the row: the pattern and the fault, the same on every
	// backend that runs them.
	Key string
	// Setting is the condition's setting within the row, which the cell
	// names before the condition's outcome: "serializable",
	// "WAL/NORMAL", "synchronous_commit=off"; empty when the folder runs
	// the row once.
	Setting string
}

// RowOf is the row condition stands in.
func (c Compared) RowOf(condition string) Row {
	if r, ok := c.Rows[condition]; ok && r.Key != "" {
		return r
	}
	return Row{Key: condition}
}

// DatabaseWords names the database a scenario's workers used: on
// PostgreSQL (requested set) the settings their sessions read back, or
// the requested ones, marked so, when no worker read them back; on SQLite
// the pragmas sqlite, which the caller takes from the workers' read-back.
func DatabaseWords(sqlite sqlitedb.Settings, requested *store.PGRequested, pg *store.PGSettings) string {
	switch {
	case pg != nil:
		version, _, _ := strings.Cut(pg.ServerVersion, " ")
		return fmt.Sprintf("PostgreSQL %s, %s, synchronous_commit=%s", version, pg.DefaultTransactionIsolation, pg.SynchronousCommit)
	case requested != nil:
		return fmt.Sprintf("PostgreSQL, %s, synchronous_commit=%s (requested; no worker read them back)", requested.Isolation, requested.SynchronousCommit)
	}
	return fmt.Sprintf("SQLite journal_mode=%s synchronous=%s", sqlite.JournalMode, sqlite.Synchronous)
}
