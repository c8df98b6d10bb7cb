package engine

import (
	"slices"

	"idemlab/experiments/seed"
	"idemlab/worker/faultvfs"
)

// Kind is a fault class's one canonical name inside the engine. What a
// scenario records (a condition's suffix, an observation's kind) is its
// own label, mapped from the Kind in one table per scenario.
type Kind string

// The fault classes.
const (
	// None is the discovery delivery: no fault, the points it passes and
	// how long it takes are what the other classes plan from.
	None Kind = "none"
	// Points crashes at each discovered point, one trial per point.
	Points Kind = "points"
	// CrashAtHit crashes at a seeded hit, 1 to the number of points.
	CrashAtHit Kind = "crash-at-hit"
	// DelayKill kills after a seeded delay within the kill window.
	DelayKill Kind = "delay-kill"
	// Concurrent runs racers behind a barrier, some of them faulted by the
	// set's RaceFault (DelayKill after the release, or CrashAtHit).
	Concurrent Kind = "concurrent"
	// Power cuts the power at each point, after the ACK, and after the ACK
	// with the connection open, under each model of what a cut leaves.
	Power Kind = "power"
	// Takeover pauses a lease holder at each discovered point while a
	// successor takes its job over.
	Takeover Kind = "takeover"
	// ServerCrash stops the worker at each discovered point, or lets it
	// ACK, then crashes the database server itself (every process,
	// SIGKILL), restarts it and lets recovery run before the redelivery:
	// PostgreSQL's counterpart of Power. Its trials run one at a time,
	// since a crash takes the one server down.
	ServerCrash Kind = "server-crash"
)

// Class is a fault class: how the engine plans and schedules it.
type Class struct {
	Kind Kind
	// Scheduled: the OS scheduler decides its outcome (a kill's landing, a
	// race's interleaving), so a rerun compares its verdict only; else the
	// seed and the points decide it and a rerun replays it exactly.
	Scheduled bool
	// Sequential: its trials run one at a time, after every parallel
	// class's, since they share one thing that cannot be shared: a
	// ServerCrash trial takes the run's one database server down. A race
	// (Concurrent) is not: its racers start and are released together
	// whatever else runs, and the OS's interleaving of them is what it
	// measures, so races run side by side with the other trials.
	Sequential bool
	// Waits: its trials spend most of their time waiting on a clock, not
	// on a CPU (a takeover's successor waits out the lease's TTL while
	// the holder stands still), and the parent orders their processes, so
	// the load cannot change what they record. They run beside the slots,
	// as many at once again, not in them: in a slot they would leave a
	// core idle for the length of a TTL.
	Waits bool
	// Plan lists the trials of one set, every one, before the shard
	// filter, in index order.
	Plan func(Input) []Trial
	// Fault is the word a pattern file's run names the class by (its
	// --faults); a word may name more than one class (random), and a
	// class pattern files do not run has none.
	Fault string
	// Labels are what each vocabulary records of the class: the one place
	// a recorded spelling of a class stands.
	Labels Labels
}

// Labels are a class's recorded spellings, by vocabulary: explore's
// condition kinds (its built-in workers), pattern's observation kinds (a
// pattern file's trials, under explore's articles too) and durability's
// crash kinds. A vocabulary that never runs the class has none.
type Labels struct {
	Explore, Pattern, Durability string
}

// The vocabularies of Labels.
const (
	Explore    = "explore"
	Pattern    = "pattern"
	Durability = "durability"
)

// of is the label of vocabulary v; "" for one not named here.
func (l Labels) of(v string) string {
	switch v {
	case Explore:
		return l.Explore
	case Pattern:
		return l.Pattern
	case Durability:
		return l.Durability
	}
	return ""
}

// Classes is the registry: every fault class the engine knows, once, each
// on one line with its plan, its word in a pattern file's faults and what
// each scenario records of it.
var Classes = []Class{
	{Kind: None, Plan: planNone, Fault: "none", Labels: Labels{Explore: "discovery", Pattern: "discovery"}},
	{Kind: Points, Plan: planPoints, Fault: "points", Labels: Labels{Explore: "sweep", Pattern: "point", Durability: "kill"}},
	{Kind: CrashAtHit, Plan: planCrashAtHit, Fault: "random", Labels: Labels{Explore: "crash-after-hits", Pattern: "crash-after-hits"}},
	{Kind: DelayKill, Scheduled: true, Plan: planDelayKill, Fault: "random", Labels: Labels{Explore: "timing-kill", Pattern: "kill"}},
	{Kind: Concurrent, Scheduled: true, Plan: planConcurrent, Fault: "concurrent", Labels: Labels{Explore: "timing-race", Pattern: "race"}},
	{Kind: Power, Plan: planPower, Fault: "power", Labels: Labels{Pattern: "power", Durability: "power"}},
	{Kind: Takeover, Waits: true, Plan: planPoints, Labels: Labels{Explore: "takeover"}},
	{Kind: ServerCrash, Sequential: true, Plan: planPoints, Labels: Labels{Durability: "server"}},
}

// Lookup is the registered class of kind k.
func Lookup(k Kind) (Class, bool) {
	i := slices.IndexFunc(Classes, func(c Class) bool { return c.Kind == k })
	if i < 0 {
		return Class{}, false
	}
	return Classes[i], true
}

// Scheduled says whether the class of kind k is scheduled by the OS; false
// for a kind not registered.
func Scheduled(k Kind) bool {
	c, _ := Lookup(k)
	return c.Scheduled
}

// Label is what vocabulary v records of the class of kind k; "" where v
// never runs it.
func Label(v string, k Kind) string {
	c, _ := Lookup(k)
	return c.Labels.of(v)
}

// KindOf is the class vocabulary v records as label.
func KindOf(v, label string) (Kind, bool) {
	i := slices.IndexFunc(Classes, func(c Class) bool { return label != "" && c.Labels.of(v) == label })
	if i < 0 {
		return "", false
	}
	return Classes[i].Kind, true
}

// FaultWords are the words a pattern file's faults and known_unsafe may
// name, each once, in the registry's order, which is the order a pattern
// run runs its classes in: every class's Fault but the discovery's (None),
// which every run makes. This is the one list of them: worker/pattern,
// below the engine, checks a file's known_unsafe against the list its
// caller passes in (wp.File.CheckFaults).
func FaultWords() []string {
	var out []string
	for _, c := range Classes {
		if c.Kind != None && c.Fault != "" && !slices.Contains(out, c.Fault) {
			out = append(out, c.Fault)
		}
	}
	return out
}

// ClassesOf are the classes a pattern file's fault word names, in the
// registry's order.
func ClassesOf(fault string) []Kind {
	var out []Kind
	for _, c := range Classes {
		if fault != "" && c.Fault == fault {
			out = append(out, c.Kind)
		}
	}
	return out
}

func planNone(in Input) []Trial {
	return []Trial{in.trial(0)}
}

// planPoints is one trial per discovered point, the point its index.
func planPoints(in Input) []Trial {
	out := make([]Trial, 0, len(in.Found.Points))
	for i, pt := range in.Found.Points {
		t := in.trial(i)
		t.Point = pt
		out = append(out, t)
	}
	return out
}

// counted plans one trial per index of a counted set, each filled in by
// draw.
func counted(in Input, draw func(t *Trial)) []Trial {
	out := make([]Trial, 0, len(in.Indices))
	for _, i := range in.Indices {
		t := in.trial(i)
		draw(&t)
		out = append(out, t)
	}
	return out
}

func planCrashAtHit(in Input) []Trial {
	return counted(in, func(t *Trial) { t.K = seed.CrashK(in.Seed, in.Condition, t.Index, len(in.Found.Points)) })
}

func planDelayKill(in Input) []Trial {
	return counted(in, func(t *Trial) { t.KillUS = seed.KillDelayUS(in.Seed, in.Condition, t.Index, in.Found.WindowUS) })
}

func planConcurrent(in Input) []Trial {
	return counted(in, func(t *Trial) {
		t.Racers = in.Racers
		switch in.RaceFault {
		case DelayKill:
			t.KillsUS = seed.RaceKillsUS(in.Seed, in.Condition, t.Index, in.Racers, in.Found.WindowUS)
		case CrashAtHit:
			t.CrashK = seed.RaceCrashK(in.Seed, in.Condition, t.Index, in.Racers, len(in.Found.Points))
		}
	})
}

// PointACK is the power trial whose cut comes after the first delivery
// acknowledged, with nothing of it left to redeliver.
const PointACK = "ack"

// PointACKOpen is the power trial whose cut comes after the first delivery
// acknowledged with its connection still open, as a service with a
// connection pool ACKs: no close runs, so no close-time checkpoint either.
const PointACKOpen = "ack-open"

// PowerModels are what a power cut may leave of the writes no sync
// covered, each a row of every power setting: nothing (drop, the lower
// bound), everything (keep, the upper bound, as after a process crash),
// and a seeded tearing between the two.
var PowerModels = []string{faultvfs.FaultDrop, faultvfs.FaultKeep, faultvfs.FaultTorn}

// Power layers: where a Power trial's cut is made. LayerVFS, the
// default, cuts inside idemlab's own SQLite VFS (worker/faultvfs); LayerFS
// cuts in the power-loss filesystem under the process (worker/powerfs),
// one mount per trial.
const (
	LayerVFS = "vfs"
	LayerFS  = "fs"
)

// PowerLayers are the power layers, the default first.
var PowerLayers = []string{LayerVFS, LayerFS}

// PowerCut is one trial of a power set: the model and the cut.
type PowerCut struct {
	Model string
	Point string
}

// PowerPlan lists a power set's cuts, model by model: at each discovered
// point, after the ACK, and after the ACK with the connection open.
// legacy is a folder of format 4 or older, whose power trials recorded no
// model: the drop model only, and no ack-open cut, with the same trial
// numbers as the first trials of today's plan.
func PowerPlan(points []string, legacy bool) []PowerCut {
	cuts := append(append([]string{}, points...), PointACK)
	models := PowerModels
	if legacy {
		models = []string{""}
	} else {
		cuts = append(cuts, PointACKOpen)
	}
	var out []PowerCut
	for _, m := range models {
		for _, pt := range cuts {
			out = append(out, PowerCut{Model: m, Point: pt})
		}
	}
	return out
}

func planPower(in Input) []Trial {
	var out []Trial
	for i, pc := range PowerPlan(in.Found.Points, in.Legacy) {
		t := in.trial(i)
		t.Point, t.Model = pc.Point, pc.Model
		out = append(out, t)
	}
	return out
}
