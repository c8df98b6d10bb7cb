package subject

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

// StepRecovery names the observation of a recovery's last process.
const StepRecovery = "recovery"

// OutcomeClean is the outcome that breaks nothing.
const OutcomeClean = "clean"

// History is one trial: its steps in order, the last being the recovery.
type History struct {
	Steps []Step `json:"steps"`
	// Items is the number of items a batch subject delivers; 0 otherwise.
	Items int `json:"items,omitempty"`
}

// Final is the history's last step, the recovery; false when it has none.
func (h History) Final() (Step, bool) {
	if len(h.Steps) == 0 {
		return Step{}, false
	}
	return h.Steps[len(h.Steps)-1], true
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
