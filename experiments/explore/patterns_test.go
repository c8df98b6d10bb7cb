package explore

import (
	"fmt"
	"idemlab/experiments/subject/builtin"
	"testing"
)

// TestMatrixTableWidth: fifty items fold into two rows within 100 columns.
func TestMatrixTableWidth(t *testing.T) {
	m := Matrix{Patterns: []string{"separate-commit", "single-transaction", "batch-journal", "batch-rerun-all", "claim-ttl", "lease-batch"}}
	for i := 1; i <= 50; i++ {
		for _, k := range []string{"before-send", "after-send-accepted"} {
			m.Points = append(m.Points, fmt.Sprintf("%s:item-%03d", k, i))
			m.Cells = append(m.Cells, []string{"", "", OutcomeClean, builtin.Duplicates(i), "", OutcomeClean})
			m.Violating = append(m.Violating, []bool{false, false, false, true, false, false})
		}
	}
	tb := MatrixTable(m)
	if len(tb.Rows) != 2 {
		t.Fatalf("%d rows, want the two point kinds", len(tb.Rows))
	}
	widths := make([]int, len(tb.Header))
	for _, r := range append([][]string{tb.Header}, tb.Rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	w := 2 * (len(widths) - 1)
	for _, n := range widths {
		w += n
	}
	if w > 100 {
		t.Errorf("the table is %d columns wide: %v", w, widths)
	}
	if got := tb.Rows[0][4]; got != "✗ 50/50 +1..+50" {
		t.Errorf("rerun-all cell %q", got)
	}
}
