package engine

import "idemlab/experiments/shard"

// Trial is one trial the engine plans and a subject runs: what is done to
// its first delivery. Only the fields of its class are set.
type Trial struct {
	Class     Kind
	Condition string
	Index     int
	// Point is where a Points, Power or Takeover trial crashes, cuts or
	// pauses.
	Point string
	// K is a CrashAtHit trial's hit, KillUS a DelayKill trial's delay.
	K      int
	KillUS int64
	// Racers is a Concurrent trial's racer count; CrashK and KillsUS its
	// faults per racer (0 for none), by its set's RaceFault.
	Racers  int
	CrashK  []int
	KillsUS []int64
	// Model is a Power trial's model of what the cut leaves.
	Model string
	// Layer is where a Power trial's cut is made: LayerVFS or LayerFS.
	Layer string
	// Seed is a swept trial's seed index, Key its key in its condition
	// (Sweep.Key); a trial with a key has the id "condition@key".
	Seed int
	Key  string
}

// ID is the trial's id in the plan: shard.TrialID(condition, index), or
// "condition@key" for a swept trial.
func (t Trial) ID() string {
	if t.Key != "" {
		return t.Condition + "@" + t.Key
	}
	return shard.TrialID(t.Condition, t.Index)
}

// Listed is the trial as a fold lists it in the whole plan
// (scenario.Folded.Plan).
func (t Trial) Listed() shard.Trial { return shard.Trial{Condition: t.Condition, ID: t.ID()} }

// Ran is the trial as a fold lists it among those the records hold
// (scenario.Folded.Ran), from a line of shard sh.
func (t Trial) Ran(sh int) shard.Ran { return shard.Ran{Trial: t.Listed(), Shard: sh} }

// Set is what a scenario asks of one class in one condition. A
// condition may hold several sets (pattern's random class is a
// CrashAtHit set and a DelayKill set under one name).
type Set struct {
	Class     Kind
	Condition string
	// Indices are the trials of a counted class (CrashAtHit, DelayKill,
	// Concurrent); the point classes plan one per point and ignore them.
	Indices []int
	// Racers and RaceFault are a Concurrent set's racer count and what
	// is done to its racers: None, DelayKill or CrashAtHit.
	Racers    int
	RaceFault Kind
	// Legacy plans a Power set as a folder of format 4 or older did.
	Legacy bool
	// Sweep, when set, plans the set over point × seed instead of by its
	// class's plan (sweep.go).
	Sweep *Sweep
}

// Found is what a discovery delivery tells the plan: the points it
// passed, in order, the kill window in microseconds, and the syncs its
// first process made (a Sweep's sync points).
type Found struct {
	Points   []string
	WindowUS int64
	Syncs    int
	// SyncsFrom, when not 0, is the syncs counted before the delivery
	// began (a PostgreSQL power trial's server start and Setup): a sweep
	// cuts at SyncsFrom+1..Syncs, the window the delivery made
	// (backend.SyncWindow).
	SyncsFrom int
}

// Input is what a class plans one set from.
type Input struct {
	Set
	Seed  uint64
	Found Found
}

func (in Input) trial(i int) Trial {
	return Trial{Class: in.Class, Condition: in.Condition, Index: i}
}

// Count is from, from+1, … from+n-1: the indices of a counted set of n
// trials numbered from from.
func Count(from, n int) []int {
	out := make([]int, 0, max(0, n))
	for i := range n {
		out = append(out, from+i)
	}
	return out
}
