package cmd

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"idemlab/experiments/scenario"
)

// TestTableWrapsNotCuts prints explore's widest table, with the outcomes
// of a default run: every line fits the terminal and no outcome loses its
// end, which is where the rarest outcome is.
func TestTableWrapsNotCuts(t *testing.T) {
	tb := scenario.Table{
		Title:  "seeded random trials and races: outcomes after the redelivery",
		Header: []string{"condition", "trials", "outcomes", "violating", "ok"},
		Rows: [][]string{
			{"separate-commit/crash-after-hits", "100", "clean 61, duplicate-2 39", "39 (39.0%)", "✓"},
			{"single-transaction/timing-race-2-kill", "6", "clean 6", "0 (0.0%)", "✓"},
			{"batch-rerun-all/crash-after-hits", "12", "clean 3, duplicates-1 1, duplicates-2 3, duplicates-3 2, duplicates-4 3", "9 (75.0%)", "✓"},
			{"claim-ttl/timing-kill", "12", "done-by-delivery 1, done-by-probe 6, done-by-recovery 5", "0 (0.0%)", "✓"},
		},
	}
	var b bytes.Buffer
	printTable(&b, tb)
	out := b.String()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); n > maxWidth {
			t.Errorf("line of %d runes, more than %d: %q", n, maxWidth, l)
		}
	}
	if strings.Contains(out, "…") {
		t.Errorf("a cell is cut:\n%s", out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, r := range tb.Rows {
		for _, cell := range r {
			for _, word := range strings.Fields(cell) {
				if !strings.Contains(flat, strings.TrimSuffix(word, ",")) {
					t.Errorf("%q of %q is not printed:\n%s", word, cell, out)
				}
			}
		}
	}
	if !strings.Contains(out, "duplicates-4 3") {
		t.Errorf("the last outcome is not printed whole:\n%s", out)
	}
}

func TestCellLines(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"clean 3, duplicates-1 1, duplicates-2 3", 16, []string{"clean 3,", "duplicates-1 1,", "duplicates-2 3"}},
		{"single-transaction/timing-race-2-kill", 20, []string{"single-transaction/", "timing-race-2-kill"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		// Between phrases where it can: an invariant's want and got stay on one line.
		{"trial 10, power cut after the ACK: one job want 1 got 0; processed want 1 got 0", 40, []string{"trial 10, power cut after the ACK:", "one job want 1 got 0;", "processed want 1 got 0"}},
		// Else between words, not inside a point's name.
		{"trial 7, crash at after-4-commit: one job want 1 got 2", 30, []string{"trial 7, crash at", "after-4-commit:", "one job want 1 got 2"}},
	}
	for _, tt := range tests {
		got := cellLines(tt.s, tt.width)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("cellLines(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
