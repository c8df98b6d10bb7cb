package pattern

import (
	"strings"

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
		out = append(out, scenario.Expected{Condition: c.Name, Value: Verdict{Violated: KnownUnsafe(pats[c.Pattern].File, c)}})
	}
	return out, nil
}

// KnownUnsafe says whether the file expects a violation in the condition:
// a listed class covers all of it, "power:WAL/NORMAL" one setting.
func KnownUnsafe(f wp.File, c Condition) bool {
	if c.Fault == FaultNone {
		return false
	}
	for _, k := range f.KnownUnsafe {
		class, narrow, has := strings.Cut(k, ":")
		if class != c.Fault {
			continue
		}
		if !has {
			return true
		}
		j, sy, err := wp.ParsePower(narrow)
		if err == nil && j+"/"+sy == c.Power {
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
