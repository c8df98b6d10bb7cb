package subject

import "fmt"

// Observation is one line of observations.jsonl: one step of one trial,
// the processes it ran, what the run chose for them (point, k, kill
// delays) and the rows the parent read from the file afterwards.
type Observation struct {
	Scenario   string `json:"scenario"`
	Condition  string `json:"condition"`
	Trial      int    `json:"trial"`
	Step       string `json:"step"`
	ProcessIDs []int  `json:"process_ids"`
	DB         string `json:"db"`
	// Receiver is the bare URL of the trial's receiver, for a subject
	// that sends.
	Receiver string `json:"receiver,omitempty"`
	// Senders has one entry per process: the sender token the parent
	// minted for it before it started, carried in the receiver URL the
	// process was given and logged by the receiver with each of its
	// sends. Absent in folders of format 4 and older.
	Senders []string `json:"senders,omitempty"`
	// Lookup is what the parent asked the receiver before a resolve.
	Lookup *Lookup `json:"lookup,omitempty"`
	Point  string  `json:"point,omitempty"`
	K      int     `json:"k,omitempty"`
	// KillDelaysUS has one entry per process: 0 for no kill, else the
	// delay before SIGKILL (from the start for a kill trial, from the
	// release for a racer).
	KillDelaysUS []int64 `json:"kill_delays_us,omitempty"`
	Rows         State   `json:"rows"`
}

// Steps of a trial, as its observations name them.
const (
	StepDelivery = "delivery"
	StepRacers   = "racers"
	// A takeover's steps: the successor, once it finished, then the
	// paused holder, once it ran on.
	StepSuccessor = "successor"
	StepStale     = "stale-holder"
)

// Label is the harness label of trial i's process of step.
func Label(i int, step string) string { return fmt.Sprintf("trial %06d %s", i, step) }
