package batch

import (
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// RunResult is the report payload of batch.run.
type RunResult struct {
	Mode  string `json:"mode"`
	JobID string `json:"job_id"`
	Items int    `json:"items"`
	Outcome
	// MS is the time of the batch loop alone, measured in the worker like
	// the article's in-process timing; opening the journal is excluded.
	MS     float64            `json:"ms"`
	SQLite *sqlitedb.Settings `json:"sqlite,omitempty"`
	// Postgres is what the session read back on PostgreSQL, and
	// SerializationRetries the marks run again after 40001 or 40P01.
	Postgres             *store.PGSettings `json:"postgres,omitempty"`
	SerializationRetries int               `json:"serialization_retries,omitempty"`
}

// ResolveResult is the report payload of batch.resolve.
type ResolveResult struct {
	Key       string `json:"key"`
	Delivered bool   `json:"delivered"`
	Receipt   string `json:"receipt,omitempty"`
}
