package pattern

import (
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
)

const faultvfsName = faultvfs.Name

// Expect is the oracle: a pattern holds its invariants under every fault
// class, except where its file lists the class in known_unsafe; there a
// violation is expected, and a class that shows none fails the run, so a
// fixed bug is noticed.
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	pats := map[string]Pattern{}
	for _, p := range st.Patterns {
		pats[p.File.Name] = p
	}
	var out []scenario.Expected
	for _, c := range st.Conditions {
		unsafe := KnownUnsafe(pats[c.Pattern].File, c, st.Target())
		out = append(out, scenario.Expected{Condition: c.Name, Value: Expected{Violated: unsafe, InSomeShard: unsafe && st.Shard != nil}})
	}
	return out, nil
}

// Expected is a condition's expected figure.
type Expected struct {
	Violated bool `json:"violated"`
	// InSomeShard is set in a shard's folder for a known-unsafe class:
	// the class must break in some trial of the whole plan, which need
	// not be one of this shard's, so the shard's part is not judged; the
	// merged folder judges the whole plan.
	InSomeShard bool `json:"in_some_shard,omitempty"`
}

// Check compares the verdicts, but passes a shard's known-unsafe class
// whatever its part showed.
func (Scenario) Check(condition string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	var e Expected
	var o Verdict
	if err := scenario.DecodeStrict(expected, &e); err != nil {
		return false, nil, fmt.Errorf("expected of %s: %w", condition, err)
	}
	if err := scenario.DecodeStrict(observed, &o); err != nil {
		return false, nil, fmt.Errorf("observed of %s: %w", condition, err)
	}
	if e.InSomeShard {
		return true, nil, nil
	}
	diffs := scenario.Differences(Verdict{Violated: e.Violated}, o)
	return len(diffs) == 0, diffs, nil
}

// KnownUnsafe says whether the file expects a violation in the condition
// run on t: a listed class covers all of it, "power:WAL/NORMAL" one
// setting, "concurrent@postgres/serializable" one backend and level.
func KnownUnsafe(f wp.File, c Condition, t wp.Target) bool {
	if c.Fault == FaultNone {
		return false
	}
	for _, k := range f.KnownUnsafe {
		u, err := wp.ParseUnsafe(k)
		if err == nil && u.Covers(c.Fault, c.Power, t) {
			return true
		}
	}
	return false
}

func splitPower(s string) (journalMode, synchronous string) {
	j, sy, _ := strings.Cut(s, "/")
	return j, sy
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Scheduled says which conditions the OS schedules: the random class
// (half its trials are kills after a delay) and the races, whose processes
// a rerun does not compare.
func (Scenario) Scheduled(condition string) bool {
	return strings.HasSuffix(condition, "/"+wp.FaultRandom) || strings.HasSuffix(condition, "/"+wp.FaultConcurrent)
}
