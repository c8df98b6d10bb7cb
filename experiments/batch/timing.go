package batch

import (
	"math"
	"time"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	wb "idemlab/worker/batch"
	"idemlab/worker/store"
)

// RunTiming is one run's times. WorkerMS is the batch loop timed inside
// the worker (its own word, absent for a crashed run); ProcessMS is the
// whole process as the parent timed it; FloorMS is the simulated latency
// of the steps it executed, from the journal and the receiver's log.
type RunTiming struct {
	Run       int      `json:"run"`
	WorkerMS  *float64 `json:"worker_ms,omitempty" idemlab:"measure"`
	ProcessMS float64  `json:"process_ms" idemlab:"measure"`
	FloorMS   float64  `json:"floor_ms"`
}

// TrialTiming is one trial's times over the runs after run 1, which is
// what the article times (rerun all's run 2, the journal's runs 2 and 3).
type TrialTiming struct {
	Condition string      `json:"condition"`
	Trial     int         `json:"trial"`
	Runs      []RunTiming `json:"runs"`
	MS        float64     `json:"ms" idemlab:"measure"`
	ProcessMS float64     `json:"process_ms" idemlab:"measure"`
	FloorMS   float64     `json:"floor_ms"`
	Ratio     float64     `json:"ratio" idemlab:"measure"`
	// AllRunsFloorMS includes run 1, for the scenario's wall time.
	AllRunsFloorMS float64 `json:"all_runs_floor_ms"`
}

// TimingSummary averages a condition's trials.
type TimingSummary struct {
	Condition    string    `json:"condition"`
	MS           []float64 `json:"ms" idemlab:"measure"`
	AvgMS        float64   `json:"avg_ms" idemlab:"measure"`
	AvgProcessMS float64   `json:"avg_process_ms" idemlab:"measure"`
	FloorMS      float64   `json:"floor_ms"`
	Ratio        float64   `json:"ratio" idemlab:"measure"`
	// Target and WithinTarget are set for the journal conditions.
	Target       float64 `json:"target,omitempty"`
	WithinTarget *bool   `json:"within_target,omitempty" idemlab:"measure"`
}

// Wall is the scenario's wall time, first process start to last process
// end, against the floor of its critical path: in each lane, the simulated
// latency of the slowest sub-lane of first runs plus that of every later
// run; the slowest lane when modes run side by side.
type Wall struct {
	MS           float64 `json:"ms" idemlab:"measure"`
	FloorMS      float64 `json:"floor_ms"`
	Ratio        float64 `json:"ratio" idemlab:"measure"`
	Target       float64 `json:"target"`
	WithinTarget bool    `json:"within_target" idemlab:"measure"`
}

// Extra is the scenario's timing table.
type Extra struct {
	Timings []TimingSummary `json:"timings"`
	Trials  []TrialTiming   `json:"trials"`
	Wall    Wall            `json:"wall"`
	// PostgresReadBack is what the journal runs' sessions read back on
	// PostgreSQL: the server's version and the settings they ran with,
	// the same for every run (the fold checks it).
	PostgresReadBack *store.PGSettings `json:"postgres_read_back,omitempty"`
	// LateSends are the sends the receiver logged after the parent had
	// seen their sender end; each is its sender's.
	LateSends []receiver.LateSend `json:"late_sends,omitempty"`
}

func floorOf(lat Latency, exec map[string]int) float64 {
	return float64(exec[wb.StepValidate])*lat.Validate + float64(exec[wb.StepTransform])*lat.Transform + float64(exec[wb.StepNotify])*lat.Send
}

func (tf *trialFold) timing(c Condition) TrialTiming {
	t := TrialTiming{Condition: c.Name, Trial: tf.n, Runs: tf.timings}
	if t.Runs == nil {
		t.Runs = []RunTiming{}
	}
	for _, r := range tf.timings {
		t.AllRunsFloorMS += r.FloorMS
		if r.Run == 1 {
			continue
		}
		if r.WorkerMS != nil {
			t.MS += *r.WorkerMS
		}
		t.ProcessMS += r.ProcessMS
		t.FloorMS += r.FloorMS
	}
	if t.FloorMS > 0 {
		t.Ratio = round3(t.MS / t.FloorMS)
	}
	t.MS, t.ProcessMS, t.FloorMS, t.AllRunsFloorMS = round2(t.MS), round2(t.ProcessMS), round2(t.FloorMS), round2(t.AllRunsFloorMS)
	return t
}

// Summarise averages a condition's trials and checks the journal's target.
func Summarise(st Settings, c Condition, ts []TrialTiming) TimingSummary {
	s := TimingSummary{Condition: c.Name, MS: []float64{}}
	var ms, proc, floor float64
	for _, t := range ts {
		s.MS = append(s.MS, t.MS)
		ms += t.MS
		proc += t.ProcessMS
		floor += t.FloorMS
	}
	n := float64(max(len(ts), 1))
	s.AvgMS, s.AvgProcessMS, s.FloorMS = round2(ms/n), round2(proc/n), round2(floor/n)
	if floor > 0 {
		s.Ratio = round3(ms / floor)
	}
	// Without simulated latency there is no floor to compare with.
	if (c.Condition == CondJournal || c.Condition == CondHardCrash) && floor > 0 {
		ok := s.Ratio <= st.Targets.JournalRuns23
		s.Target, s.WithinTarget = st.Targets.JournalRuns23, &ok
	}
	return s
}

func wall(st Settings, rec results.Records, floor float64) Wall {
	w := Wall{FloorMS: round2(floor), Target: st.Targets.Wall}
	var first, last time.Time
	for i, p := range rec.Processes {
		s, err1 := time.Parse(time.RFC3339Nano, p.StartedAt)
		e, err2 := time.Parse(time.RFC3339Nano, p.EndedAt)
		if err1 != nil || err2 != nil {
			continue
		}
		if i == 0 || s.Before(first) {
			first = s
		}
		if i == 0 || e.After(last) {
			last = e
		}
	}
	w.MS = round2(float64(last.Sub(first).Microseconds()) / 1000)
	if floor > 0 {
		w.Ratio = round3(w.MS / floor)
		w.WithinTarget = w.Ratio <= w.Target
	}
	return w
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// laneFloor is the floor of one lane's critical path, its trials in the
// order it ran them: the slowest sub-lane of first runs (trial i in
// sub-lane i mod k), then every later run one after another.
func laneFloor(ts []TrialTiming, k int) float64 {
	k = max(k, 1)
	first := make([]float64, k)
	var rest float64
	for i, t := range ts {
		var f1 float64
		for _, r := range t.Runs {
			if r.Run == 1 {
				f1 += r.FloorMS
			}
		}
		first[i%k] += f1
		rest += t.AllRunsFloorMS - f1
	}
	var slowest float64
	for _, f := range first {
		slowest = max(slowest, f)
	}
	return slowest + rest
}
