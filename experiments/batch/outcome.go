package batch

// Run statuses beyond the worker's own: a run that died at a crash point
// reports nothing else.
const StatusCrashed = "crashed"

// RunObs is what one run of the worker did.
type RunObs struct {
	Run            int            `json:"run"`
	JobID          string         `json:"job_id"`
	Mode           string         `json:"mode"`
	ExitCode       int            `json:"exit_code"`
	Status         string         `json:"status"`
	ExecutedSteps  int            `json:"executed_steps"`
	SkippedSteps   int            `json:"skipped_steps"`
	Held           []string       `json:"held"`
	ExecutedByStep map[string]int `json:"executed_by_step"`
	Failed         string         `json:"failed,omitempty"`
	ErrorType      string         `json:"error_type,omitempty"`
	CrashedAt      string         `json:"crashed_at,omitempty"`
}

// ResolveObs is one resolve the parent made after checking the receiver.
type ResolveObs struct {
	Key       string `json:"key"`
	Delivered bool   `json:"delivered"`
	Receipt   string `json:"receipt,omitempty"`
}

// Outcome is everything deterministic a condition produced; timings are
// kept apart because they are measurements, not expectations.
type Outcome struct {
	Runs     []RunObs     `json:"runs"`
	Resolved []ResolveObs `json:"resolved"`
	// Steps is the executed steps of the last run: the article's "steps"
	// of the rerun.
	Steps         int `json:"steps"`
	Duplicates    int `json:"duplicates"`
	SentOnceItems int `json:"sent_once_items"`
	Accepts       int `json:"accepts"`
	// JournalRows counts the rows by status at the end; empty without a
	// journal.
	JournalRows map[string]int `json:"journal_rows"`
}
