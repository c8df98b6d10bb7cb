// Package engine is the one trial engine of the fault scenarios: explore,
// pattern and durability plan and run their trials through it.
//
// A subject is what one delivery runs: explore's built-in Go workers, or a
// pattern file or program. It has one method, Deliver, which runs a trial
// from a fresh database to the parent's record of it; its discovery
// delivery (class None) reports the named points it passed and the kill
// window.
//
// A class is a fault class as a value (Class), registered once in
// Classes: its one name (Kind), whether the OS schedules its outcome
// (kills, races) or the seed does, whether its trials run in parallel, in
// no slot (they wait on a clock) or one at a time, and how it plans its trials from the seed, the
// condition, its trial indices, the discovered points and the kill window.
// Scenarios record their own labels for the classes (explore's
// "timing-kill", pattern's "kill", durability's "server" for
// ServerCrash), spelled once, on the class's line (Labels), as is the
// word a pattern file's faults name it by (Fault; FaultWords lists them). A set may plan by
// a Sweep instead of its class's plan (sweep.go): every point the
// discovery passed, extra points and the syncs it made, each with its
// seeds, keyed "condition@point[#seed]", as durability plans.
//
// A trial is a typed Trial: its class, condition and index, whose id is
// shard.TrialID(condition, index), and what its class does to the first
// delivery (a point, a hit, a delay, racers, a power model). Plan applies
// the shard filter; Run.Execute runs the discoveries side by side, then
// the parallel classes' trials (races among them) through
// harness.RunJobs, each delivery in one of the run's slots
// (harness.Slots, which several runs may share), beside them those of a
// class that waits on a clock (Waits: takeovers), as many at once again
// but in no slot, then the sequential ones one at a time, and returns
// the trials it ran.
//
// A trial's line of observations.jsonl is the subject's payload, written
// by Record and read back by Each (record.go): decoded strictly into the
// scenario's type and matched to a condition of its settings, or a
// finding. A fold lists the plan's trials by Listed and checks each
// trial's fresh file or folder by Places (fold.go); a report says its
// tallies by Counts and finds conditions by ByName (table.go).
//
// An oracle is the scenario's own judge of what its trials recorded
// (explore's allowed outcomes, a pattern's invariants); it reads the
// records, not the engine, and stays in the scenario's fold.
//
// Read, in order: class.go (the kinds, the registry and each class's
// plan), trial.go (Trial, Set, Found, Input), sweep.go (the point × seed
// plan), engine.go (Subject, Plan, Run.Execute), record.go (Record, Each),
// fold.go (Listed, Places), table.go (Counts, ByName), then a subject:
// subject/deliver's Runner and its fold (explore's built-in subjects),
// subject/patternfile/run.go's runner.Deliver and durability/run.go's subject.
package engine
