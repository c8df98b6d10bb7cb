package harness

import (
	"bufio"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadCappedAndStray: lines at, just over and far over the line cap,
// and stray text past its cap, keep exactly the caps' bytes, and count
// every other byte but the newlines as cut.
func TestReadCappedAndStray(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name, in string
		// kept is the bytes kept of each stray line, marked how many
		// carry the cut marker, cut the bytes counted as not kept.
		kept   []int
		marked int
		cut    int64
	}{
		{"at the cap", x(SocketLineCap) + "\n", []int{SocketLineCap}, 0, 0},
		{"one over", x(SocketLineCap+1) + "\n", []int{SocketLineCap}, 1, 1},
		{"far over, no newline", x(5*SocketLineCap + 3), []int{SocketLineCap}, 1, 4*SocketLineCap + 3},
		{"stray past its cap", strings.Repeat(x(1000)+"\n", 70), append(slices.Repeat([]int{1000}, 65), StrayCap-65000), 1, 70*1000 - StrayCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &ProgramRun{}
			rd := bufio.NewReaderSize(strings.NewReader(tt.in), SocketLineCap+1)
			stray := 0
			for {
				line, cut, ended := readCapped(rd)
				run.SocketCut += cut
				if line != "" || cut > 0 {
					run.addStray(line, cut, &stray)
				}
				if !ended {
					break
				}
			}
			if run.SocketCut != tt.cut {
				t.Errorf("cut %d, want %d", run.SocketCut, tt.cut)
			}
			var kept []int
			marked := 0
			for _, s := range run.Stray {
				kept = append(kept, strings.Count(s, "x"))
				if strings.Contains(s, "[idemlab: line cut after") {
					marked++
				}
			}
			if diff := cmp.Diff(tt.kept, kept); diff != "" || marked != tt.marked {
				t.Errorf("kept (-want +got):\n%s\nmarked %d, want %d", diff, marked, tt.marked)
			}
		})
	}
}
