package pattern

import (
	"encoding/json"
	"fmt"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
)

// Expect is the oracle: a pattern holds its invariants under every fault
// class, except where its file lists the class in known_unsafe; there a
// violation is expected, and a class that shows none fails the run, so a
// fixed bug is noticed. A bare "power" expects some power setting to
// break, "power:WAL/NORMAL" that one (see Unsafety).
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	pats := map[string]Pattern{}
	for _, p := range st.Patterns {
		pats[p.File.Name] = p
	}
	var out []scenario.Expected
	for _, c := range st.Conditions {
		u := KnownUnsafe(pats[c.Pattern].File, c, st.Target(), st.KnownUnsafeRule)
		e := Expected{Violated: u != Safe, InSomeSetting: u == UnsafeSomeSetting}
		e.InSomeShard = e.Violated && st.Shard != nil
		out = append(out, scenario.Expected{Condition: c.Name, Value: e, Scheduled: c.Scheduled()})
	}
	return out, nil
}

// Expected is a condition's expected figure.
type Expected struct {
	Violated bool `json:"violated"`
	// InSomeSetting is set on a power condition that known_unsafe lists
	// by the bare class "power": some power setting of the pattern must
	// break, which need not be this one.
	InSomeSetting bool `json:"in_some_setting,omitempty"`
	// InSomeShard is set in a shard's folder for a known-unsafe class:
	// the class must break in some trial of the whole plan, which need
	// not be one of this shard's, so the shard's part is not judged; the
	// merged folder judges the whole plan.
	InSomeShard bool `json:"in_some_shard,omitempty"`
	// MayHold is set where a run asks only what a known-unsafe class the
	// OS schedules showed, not that it broke: explore's races of an
	// article file, where whether a few rounds interleave badly is the
	// scheduler's. A break is recorded and shown; holding is no failure.
	MayHold bool `json:"may_hold,omitempty"`
}

// violation is the part of the figures a verdict compares.
type violation struct {
	Violated bool `json:"violated"`
}

// Check compares the verdicts: a condition in some setting passes when
// some power setting of its pattern broke, and a shard's known-unsafe
// class passes whatever its part showed.
func (Scenario) Check(condition string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	var e Expected
	var o Verdict
	if err := scenario.DecodeStrict(expected, &e); err != nil {
		return false, nil, fmt.Errorf("expected of %s: %w", condition, err)
	}
	if err := scenario.DecodeStrict(observed, &o); err != nil {
		return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
	}
	if e.InSomeShard || e.MayHold && e.Violated || e.InSomeSetting && o.PowerViolated != nil && *o.PowerViolated {
		return true, nil, nil
	}
	diffs := scenario.Differences(violation{e.Violated}, violation{o.Violated})
	return len(diffs) == 0, diffs, nil
}

// Unsafety is what a file's known_unsafe expects of one condition.
type Unsafety int

const (
	// Safe: no entry lists the condition; every invariant must hold.
	Safe Unsafety = iota
	// UnsafeHere: an entry lists the condition ("points",
	// "power:WAL/NORMAL"); some trial of it must break.
	UnsafeHere
	// UnsafeSomeSetting: the bare "power" lists the power class; some
	// power setting of the pattern must break, not each.
	UnsafeSomeSetting
)

// KnownUnsafe says what the file expects of the condition run on t: a
// listed class covers all of it, "power:WAL/NORMAL" one setting,
// "concurrent@postgres/serializable" one backend and level. Under
// RuleSomeSetting a bare "power" asks that some setting break; an entry
// naming the setting is stricter and wins. Under the older rule (rule
// empty) a bare "power" asks every setting to break.
func KnownUnsafe(f wp.File, c Condition, t wp.Target, rule string) Unsafety {
	if c.Fault == FaultNone {
		return Safe
	}
	out := Safe
	for _, k := range f.KnownUnsafe {
		u, err := wp.ParseUnsafe(k)
		if err != nil || !u.Covers(c.Fault, c.Power, t) {
			continue
		}
		if u.Class != wp.FaultPower || u.Power != "" || rule != RuleSomeSetting {
			return UnsafeHere
		}
		out = UnsafeSomeSetting
	}
	return out
}
