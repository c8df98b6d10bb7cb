package subject

// The counts a run plans with come from the subject's model: its points,
// the state a crash at each leaves (Crashed) and the recovery the subject
// plans from that state (NextAction).

// maxRecovery bounds a recovery plan, so a subject whose plan never ends
// on its model's state counts a large trial instead of hanging the plan.
const maxRecovery = 64

// recovery is the recovery plan after a delivery that left s: the
// processes NextAction gives, one after another, reading s each time.
func (s Subject) recovery(p Params, st State) []Action {
	var out []Action
	var done []string
	for len(out) < maxRecovery {
		a, ok := s.NextAction(p, Files{}, done, st)
		if !ok {
			break
		}
		out = append(out, a)
		done = append(done, a.Step)
	}
	return out
}

// crashed is the model's state after a delivery stopped at at.
func (s Subject) crashed(p Params, at string) State {
	if s.Crashed == nil {
		return State{}
	}
	return s.Crashed(p, at)
}

// ProcessesAt is the processes of a trial whose delivery crashes at
// model point at ("" for one that runs to its end): the delivery and its
// recovery.
func (s Subject) ProcessesAt(p Params, at string) int {
	return 1 + len(s.recovery(p, s.crashed(p, at)))
}

// TrialProcesses is the most processes one trial starts: its delivery,
// crashed at the model's worst point, and the whole recovery.
func (s Subject) TrialProcesses(p Params) int {
	n := s.ProcessesAt(p, "")
	for _, at := range s.Points(p) {
		n = max(n, s.ProcessesAt(p, at))
	}
	return n
}

// RaceRecovery is the recovery's processes after a race whose racers all
// ran to their end, as on PostgreSQL, where none is killed: the recovery
// after a delivery that crashed nowhere.
func (s Subject) RaceRecovery(p Params) int { return len(s.recovery(p, s.crashed(p, ""))) }
