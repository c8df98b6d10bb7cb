package redelivery

import (
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// Delivery is what one delivery left: the child's exit code, the rows of
// both tables, and the crash points it passed.
type Delivery struct {
	Delivery        int      `json:"delivery"`
	ExitCode        int      `json:"exit_code"`
	FollowUpJobs    int      `json:"follow_up_jobs"`
	ProcessedEvents int      `json:"processed_events"`
	CrashedAt       string   `json:"crashed_at,omitempty"`
	Points          []string `json:"points"`
}

// Expect is the scenario's oracle over the recorded settings.
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, c := range st.Conditions {
		out = append(out, scenario.Expected{Condition: c.Name, Value: Expect(st, c)})
	}
	return out, nil
}

// Expect is the oracle. It looks nothing up: it runs the patterns' commit
// model (worker/redelivery's Model, which explore's allowed outcomes come
// from too), in which a commit makes pending writes durable and a crash
// discards whatever was not committed. Each condition is delivered
// s.Deliveries times; only the first delivery crashes.
func Expect(s Settings, c Condition) []Delivery {
	out := make([]Delivery, 0, s.Deliveries)
	for i, m := range wr.Deliveries(c.Pattern, c.CrashAt, s.Deliveries) {
		d := Delivery{Delivery: i + 1, ExitCode: protocol.ExitACK, FollowUpJobs: m.After.Jobs, ProcessedEvents: m.After.Processed, CrashedAt: m.CrashedAt, Points: m.Points}
		if m.CrashedAt != "" {
			d.ExitCode = protocol.ExitCrash
		}
		out = append(out, d)
	}
	return out
}
