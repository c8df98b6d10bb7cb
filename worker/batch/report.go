package batch

import "idemlab/worker/sqlitedb"

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
}

// ResolveResult is the report payload of batch.resolve.
type ResolveResult struct {
	Key       string `json:"key"`
	Delivered bool   `json:"delivered"`
	Receipt   string `json:"receipt,omitempty"`
}
