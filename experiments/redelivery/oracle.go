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
	// AfterServerCrash is what the tables held once the crashed server
	// had recovered; a server-crash condition's delivery 1 only.
	AfterServerCrash *CrashRows `json:"after_server_crash,omitempty"`
	// Broker is the broker's word, with --broker.
	Broker *BrokerDelivery `json:"broker,omitempty"`
}

// CrashRows are the rows left after the server's crash and recovery.
type CrashRows struct {
	FollowUpJobs    int `json:"follow_up_jobs"`
	ProcessedEvents int `json:"processed_events"`
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
//
// A crash of the PostgreSQL server after delivery 1 (c.ServerCrash) keeps
// every commit the worker saw succeed under synchronous_commit on or
// local. Under off, with the WAL writer asleep and nothing else
// committing (ServerCrashSettings), none of delivery 1's commits reached
// the disk, ACK or not: the server comes back as before it, and the
// redelivery is a first delivery.
func Expect(s Settings, c Condition) []Delivery {
	if s.Broker != nil {
		return expectBroker(s, c)
	}
	ms := wr.Deliveries(c.Pattern, c.CrashAt, s.Deliveries)
	lost := c.ServerCrash && s.asyncCommit()
	if lost {
		ms = append(ms[:1], wr.Deliveries(c.Pattern, "", s.Deliveries-1)...)
	}
	out := make([]Delivery, 0, s.Deliveries)
	for i, m := range ms {
		d := Delivery{Delivery: i + 1, ExitCode: protocol.ExitACK, FollowUpJobs: m.After.Jobs, ProcessedEvents: m.After.Processed, CrashedAt: m.CrashedAt, Points: m.Points}
		if m.CrashedAt != "" {
			d.ExitCode = protocol.ExitCrash
		}
		if i == 0 && c.ServerCrash {
			d.AfterServerCrash = &CrashRows{FollowUpJobs: m.After.Jobs, ProcessedEvents: m.After.Processed}
			if lost {
				d.AfterServerCrash = &CrashRows{}
			}
		}
		out = append(out, d)
	}
	return out
}
