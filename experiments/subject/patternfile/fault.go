package patternfile

// What a trial does to its first delivery, derived from the trial's
// fields (engine.Trial, as the observation records them), never from its
// class's label: the run (Env, startProgram, ConsumeProgramArgs) and the
// fold (checkPlan, crashPlanned, plannedKillAt, killPlanned) call the same
// firstFault. A class that plans only fields listed here (a point, a hit,
// a delay, racers with their hits, a power model and cut) runs through
// this subject with no code of its own: its Kind, its line in
// engine.Classes and its word are all it needs. A class whose trials
// carry a field the subject cannot apply, or none it does, is refused
// (runs, applies): it cannot pass having faulted nothing.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"idemlab/experiments/engine"
	wp "idemlab/worker/pattern"
)

// fault is what a trial does to one first delivery: racer w of a race,
// else the one delivery.
type fault struct {
	// At is the named point the delivery stops at: the built-in worker
	// crashes there (IDEMLAB_CRASH_AT), a program is killed there.
	At string
	// Hit is the point, counted from 1 in the order passed, it stops at.
	Hit int
	// KillUS is the delay of a SIGKILL: from the start, or for a program
	// with points from its first point's arrival (KillFromFirst).
	KillUS int64
	// Power says the trial's condition cuts the power: a stop at At is a
	// power cut's (the VFS's crash kind), and the redeliveries run on
	// what the cut left.
	Power bool
	// ACK is a cut once the delivery has acknowledged; AckOpen one after
	// the ACK with the connection still open, which stops a program at
	// the last point its discovery announced.
	ACK, AckOpen bool
	// Sync is a cut at the mount's fsync, whose freeze kills the delivery.
	Sync bool
}

// race says whether trial o's first delivery is a race: its racers,
// started together.
func (o Observation) race() bool { return o.Racers > 0 }

// firstFault is what trial o, of condition c, does to first delivery
// worker (a racer's index, else 0), from the trial's fields alone.
func firstFault(c Condition, o Observation, worker int) fault {
	f := fault{Hit: o.K, KillUS: o.KillUS, Power: c.Fault == wp.FaultPower}
	if o.race() {
		f.Hit = 0
		if worker < len(o.RaceCrashK) {
			f.Hit = o.RaceCrashK[worker]
		}
	}
	_, sync := syncCutOf(o)
	switch {
	case !f.Power:
		f.At = o.Point
	case o.Point == engine.PointACK:
		f.ACK = true
	case o.Point == engine.PointACKOpen:
		f.AckOpen = true
	case sync:
		f.Sync = true
	default:
		f.At = o.Point
	}
	return f
}

// crashes says whether the delivery is to stop at a point: crash (the
// built-in worker) or be killed there (a program).
func (f fault) crashes() bool { return f.At != "" || f.Hit > 0 }

// none says whether the fault does nothing to the delivery.
func (f fault) none() bool { return f == fault{Power: f.Power} }

// killAt is where the parent kills a program's first delivery: at the
// named point, at the hit, or for ack-open at last, the last point the
// discovery announced; nil where no point kills it.
func (f fault) killAt(last string) func(name string, n int) bool {
	if f.AckOpen {
		return func(name string, _ int) bool { return last != "" && name == last }
	}
	if !f.crashes() {
		return nil
	}
	return func(name string, n int) bool { return f.At != "" && name == f.At || f.Hit > 0 && n == f.Hit }
}

// errNotApplied is a trial field the pattern subject does not apply.
var errNotApplied = errors.New("the pattern subject does not apply it")

// applies refuses a trial of condition c carrying a field the subject
// cannot apply to its first delivery: racers killed after a delay, a
// sweep's seed, a power model or layer outside a power condition (or a
// layer other than the one the subject cuts in), racers with a fault of
// the whole delivery, or racers or power on a broker.
func applies(c Condition, t engine.Trial, program, broker bool) error {
	power := c.Fault == wp.FaultPower
	layer := engine.LayerVFS
	if program || onServerPower(c) {
		layer = engine.LayerFS
	}
	for _, x := range []struct {
		field string
		bad   bool
	}{
		{"kills_us", slices.ContainsFunc(t.KillsUS, func(us int64) bool { return us != 0 })},
		{"seed", t.Seed != 0},
		{"model", t.Model != "" && !power},
		{"layer", t.Layer != "" && (!power || t.Layer != layer)},
		{"crash_k", len(t.CrashK) > 0 && t.Racers == 0},
		{"racers", t.Racers > 0 && (t.Point != "" || t.K != 0 || t.KillUS != 0 || t.Model != "" || broker)},
		{"model", power && broker},
	} {
		if x.bad {
			return fmt.Errorf("field %s: %w", x.field, errNotApplied)
		}
	}
	return nil
}

// sample is the discovery runs plans a class's trials from: three
// points, a kill window, two syncs.
var sample = engine.Found{Points: []string{"p1", "p2", "p3"}, WindowUS: 1000, Syncs: 2}

// runs says whether the pattern subject runs fault class k: it has a
// pattern label (what its observations record), and every trial it plans
// from a sample discovery (four trials, two racers, no faulted racers)
// carries only fields the subject applies and does something to the
// first delivery; the discovery (None) does nothing, by definition.
func runs(k engine.Kind) error {
	c, ok := engine.Lookup(k)
	if !ok || c.Labels.Pattern == "" {
		return fmt.Errorf("fault class %s has no pattern label", k)
	}
	if k == engine.None {
		return nil
	}
	set := engine.Set{Class: k, Condition: "sample", Indices: engine.Count(0, 4), Racers: 2}
	ts, err := engine.Plan(context.Background(), 1, nil, []engine.Set{set}, sample)
	if err != nil {
		return err
	}
	if len(ts) == 0 {
		return fmt.Errorf("fault class %s plans no trial from %d points", k, len(sample.Points))
	}
	cond := Condition{Fault: c.Fault}
	for _, t := range ts {
		if err := applies(cond, t, false, false); err != nil {
			return fmt.Errorf("fault class %s: %w", k, err)
		}
		if o := observed(t); !o.race() && firstFault(cond, o, 0).none() {
			return fmt.Errorf("fault class %s: trial %d sets no field the pattern subject applies (point, k, kill_us, racers, a power cut)", k, t.Index)
		}
	}
	return nil
}

// Kinds are the pattern labels of the registered classes the subject runs
// (runs), the discovery's among them: derived from the registry, so a new
// class that plans fields the subject applies joins by its Classes line.
func Kinds() []string {
	var out []string
	for _, c := range engine.Classes {
		if runs(c.Kind) == nil {
			out = append(out, c.Labels.Pattern)
		}
	}
	return out
}

// observed is trial t as the subject's observation records what is done
// to it.
func observed(t engine.Trial) Observation {
	return Observation{Trial: t.Index, Kind: engine.Label(engine.Pattern, t.Class), Point: t.Point, Model: t.Model, K: t.K, KillUS: t.KillUS, Racers: t.Racers, RaceCrashK: t.CrashK}
}
