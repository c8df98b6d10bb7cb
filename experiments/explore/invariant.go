package explore

import (
	"fmt"

	"idemlab/worker/protocol"
)

// Step is one process of a trial's history as the records show it: its
// role, how it ended, and the rows the parent read after it (for racers,
// after all of them).
type Step struct {
	Role      string `json:"role"`
	ExitCode  int    `json:"exit_code"`
	Signal    string `json:"signal,omitempty"`
	CrashedAt string `json:"crashed_at,omitempty"`
	Rows      State  `json:"rows"`
}

// Step roles.
const (
	RoleDelivery = "delivery"
	RoleRecovery = "recovery"
	RoleRacer    = "racer"
)

// History is one trial: its steps in order, the last being the recovery.
type History struct {
	Steps []Step `json:"steps"`
}

// Invariant is a pure function from a history to what it violates, one
// message per breach; nil means it holds.
type Invariant struct {
	Name  string
	Check func(h History) []string
}

// Violation is one breach of one invariant.
type Violation struct {
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
}

// Check runs every invariant over one history.
func Check(h History, invs []Invariant) []Violation {
	var out []Violation
	for _, inv := range invs {
		for _, d := range inv.Check(h) {
			out = append(out, Violation{Invariant: inv.Name, Detail: d})
		}
	}
	return out
}

func final(h History) (Step, bool) {
	if len(h.Steps) == 0 {
		return Step{}, false
	}
	return h.Steps[len(h.Steps)-1], true
}

// oneRow says a table holds exactly one row after the recovery.
func oneRow(table, what string) func(History) []string {
	return func(h History) []string {
		last, ok := final(h)
		if !ok {
			return []string{"no steps"}
		}
		if n := len(last.Rows[table]); n != 1 {
			return []string{fmt.Sprintf("%d %ss after the recovery, want exactly 1", n, what)}
		}
		return nil
	}
}

// recoveryAcknowledged says the last step, a fresh process, finished and
// acknowledged: a pattern that cannot recover is stuck, not idempotent.
func recoveryAcknowledged(h History) []string {
	last, ok := final(h)
	if !ok {
		return []string{"no steps"}
	}
	if last.Role != RoleRecovery {
		return []string{fmt.Sprintf("the last step is a %s, not a recovery", last.Role)}
	}
	if last.Signal != "" || last.ExitCode != protocol.ExitACK {
		return []string{fmt.Sprintf("the recovery exited %d (signal %q), want 0", last.ExitCode, last.Signal)}
	}
	return nil
}

// ackLeavesWorkDone says an acknowledged step left a job and a processed
// record behind: once a delivery is acknowledged the broker forgets it,
// so work missing then is lost for good.
func ackLeavesWorkDone(h History) []string {
	var out []string
	for i, s := range h.Steps {
		if s.Signal != "" || s.ExitCode != protocol.ExitACK {
			continue
		}
		if len(s.Rows[TableJobs]) == 0 || len(s.Rows[TableProcessed]) == 0 {
			out = append(out, fmt.Sprintf("step %d (%s) acknowledged, but the file then held %d jobs and %d processed records", i+1, s.Role, len(s.Rows[TableJobs]), len(s.Rows[TableProcessed])))
		}
	}
	return out
}
