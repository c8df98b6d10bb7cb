package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/results"
)

// Counts says a tally for a report's cell, its names in sorted order:
// "busy 2, constraint 1".
func Counts(n map[string]int) string {
	return CountsIn(slices.Sorted(maps.Keys(n)), n, "%s %d", ", ")
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
