package redelivery

import (
	"encoding/json"

	"idemlab/experiments/scenario"
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
func (s Scenario) Expect(raw json.RawMessage) ([]scenario.Expected, error) {
	var st Settings
	if err := scenario.DecodeStrict(raw, &st); err != nil {
		return nil, err
	}
	oracle := s.Oracle
	if oracle == nil {
		oracle = Expect
	}
	var out []scenario.Expected
	for _, c := range st.Conditions {
		out = append(out, scenario.Expected{Condition: c.Name, Value: oracle(st, c)})
	}
	return out, nil
}

// Expect is the oracle. It does not look anything up: it runs an abstract
// model of the pattern in which a commit makes pending writes durable and a
// crash discards whatever was not committed. Each condition is delivered
// s.Deliveries times; only the first delivery crashes.
func Expect(s Settings, c Condition) []Delivery {
	var m model
	out := make([]Delivery, 0, s.Deliveries)
	for d := 1; d <= s.Deliveries; d++ {
		crashAt := ""
		if d == 1 {
			crashAt = c.CrashAt
		}
		r := m.deliver(c.Pattern, crashAt)
		r.Delivery = d
		r.FollowUpJobs, r.ProcessedEvents = m.jobs, m.processed
		out = append(out, r)
	}
	return out
}

// model is the durable state of the two tables for one event.
type model struct{ jobs, processed int }

// crashed stops the modelled delivery at a point, as os.Exit stops the
// worker.
type crashed struct{ at string }

func (m *model) deliver(p wr.Pattern, crashAt string) (r Delivery) {
	pending := *m
	r.Points = []string{}
	point := func(name string) {
		r.Points = append(r.Points, name)
		if name == crashAt {
			panic(crashed{name})
		}
	}
	commit := func() { *m = pending }
	defer func() {
		if v := recover(); v != nil {
			c, ok := v.(crashed)
			if !ok {
				panic(v)
			}
			r.ExitCode, r.CrashedAt = 17, c.at
		}
	}()
	switch p {
	case wr.SeparateCommit:
		if m.processed > 0 {
			return r
		}
		pending.jobs++
		point(wr.PointAfterJobInsert)
		commit()
		point(wr.PointAfterJobCommit)
		pending.processed = 1
		commit()
		point(wr.PointAfterProcessedCommit)
	case wr.SingleTransaction:
		claimed := pending.processed == 0
		pending.processed = 1
		point(wr.PointAfterProcessedInsert)
		if claimed {
			pending.jobs++
		}
		point(wr.PointBeforeCommit)
		commit()
		point(wr.PointAfterCommit)
	}
	return r
}
