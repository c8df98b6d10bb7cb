package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/results"
)

// Counts says a tally for a report's cell: each name that counts some,
// in sorted order, with its count by format ("%s %d"), joined by ", ":
// "busy 2, constraint 1".
func Counts(n map[string]int, format string) string {
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(n)), func(k string) bool { return n[k] == 0 })
	return CountsIn(names, n, format, ", ")
}

// CountsIn says a tally for a report's cell in the order given: each name
// and its count by format ("%s %d"), joined by sep. A name of order that
// the tally lacks counts 0.
func CountsIn(order []string, n map[string]int, format, sep string) string {
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, fmt.Sprintf(format, k, n[k]))
	}
	return strings.Join(out, sep)
}

// ByName is a result's conditions by name, for a report's table that
// looks them up in the settings' order.
func ByName(res results.ScenarioResult) map[string]results.ConditionResult {
	out := make(map[string]results.ConditionResult, len(res.Conditions))
	for _, c := range res.Conditions {
		out[c.Name] = c
	}
	return out
}
