package claim

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wc "idemlab/worker/claim"
)

func roundByID(tb testing.TB, id string) Round {
	tb.Helper()
	for _, r := range Rounds(60 * time.Second) {
		if r.ID == id {
			return r
		}
	}
	tb.Fatalf("no round %s", id)
	return Round{}
}

func TestExpectWinners(t *testing.T) {
	p := Params{Workers: 8, TTLMS: 60000, Classification: "c"}
	tests := []struct {
		kind  wc.Variant
		round string
		b     wc.Boundary
		want  string
	}{
		{wc.Legacy, "1-fresh", wc.BoundaryStrict, "A:1"},
		{wc.TTL, "1-fresh", wc.BoundaryStrict, "A:1"},
		{wc.Legacy, "2-within-ttl", wc.BoundaryStrict, "A:1 B:0"},
		{wc.TTL, "2-within-ttl", wc.BoundaryStrict, "A:1 B:0"},
		{wc.Legacy, "3-after-ttl", wc.BoundaryStrict, "A:1 B:0"},
		{wc.TTL, "3-after-ttl", wc.BoundaryStrict, "A:1 B:1"},
		{wc.TTL, "4-null-claimed-at", wc.BoundaryStrict, "A:1 B:1"},
		{wc.TTL, "5-at-boundary", wc.BoundaryStrict, "A:1 B:0"},
		{wc.TTL, "5-at-boundary", wc.BoundaryInclusive, "A:1 B:1"},
		{wc.TTL, "5-past-boundary", wc.BoundaryStrict, "A:1 B:1"},
		{wc.TTL, "6-forged-future", wc.BoundaryStrict, "A:1 B:0"},
		{wc.TTL, "6-forged-past", wc.BoundaryStrict, "A:1 B:1"},
		{wc.TTL, "7-old-schema", wc.BoundaryStrict, "A:1 B:0"},
		{wc.Legacy, "8-reclaim-keeps-downstream", wc.BoundaryStrict, "A:1 B:0"},
		{wc.TTL, "8-reclaim-keeps-downstream", wc.BoundaryStrict, "A:1 B:1"},
	}
	for _, tt := range tests {
		t.Run(tt.round+"/"+string(tt.kind)+"/"+string(tt.b), func(t *testing.T) {
			if got := Winners(Expect(tt.kind, roundByID(t, tt.round), tt.b, p)); got != tt.want {
				t.Fatalf("winners %s, want %s", got, tt.want)
			}
		})
	}
}

func TestExpectRows(t *testing.T) {
	p := Params{Workers: 4, TTLMS: 60000, Classification: "needs-triage"}
	got := Expect(wc.TTL, roundByID(t, "8-reclaim-keeps-downstream"), wc.Chosen, p)
	want := []RaceOutcome{
		{Race: "A", Workers: 1, Winners: 1, Paths: map[wc.Path]int{wc.PathUpsert: 1}, Row: RowSummary{
			Present: true, ClaimedAtCol: true, Count: 1, ClaimedAt: "A:now", FirstSeen: "A:event", LastSeen: "A:event",
			Classification: "needs-triage", ExternalID: "A:winner",
		}},
		{Race: "B", Workers: 4, Winners: 1, Paths: map[wc.Path]int{wc.PathUpsert: 4}, Row: RowSummary{
			Present: true, ClaimedAtCol: true, Count: 2, ClaimedAt: "B:now", FirstSeen: "A:event", LastSeen: "B:event",
			Classification: "needs-triage", ExternalID: "A:winner",
		}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("round 8 (-want +got):\n%s", d)
	}
	old := Expect(wc.TTL, roundByID(t, "7-old-schema"), wc.Chosen, p)
	if old[0].Paths[wc.PathFallback] != 4 || old[1].Row.ClaimedAt != ValueNull || old[1].Row.ClaimedAtCol {
		t.Fatalf("old schema: %+v", old)
	}
}

func TestSummarize(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	marks := []RaceMarks{
		{Name: "A", WinnerNows: []int64{100}, EventMS: 90, ExternalIDs: []string{"ext-a"}},
		{Name: "B", WinnerNows: []int64{200, 201}, EventMS: 190},
	}
	tests := []struct {
		name string
		row  *wc.Row
		want RowSummary
	}{
		{"no row", nil, RowSummary{ClaimedAtCol: true}},
		{"re-claimed by B", &wc.Row{HasClaimedAt: true, Count: 2, ClaimedAt: i64(201), FirstSeen: 90, LastSeen: 190, Classification: str("c"), ExternalID: str("ext-a")},
			RowSummary{Present: true, ClaimedAtCol: true, Count: 2, ClaimedAt: "B:now", FirstSeen: "A:event", LastSeen: "B:event", Classification: "c", ExternalID: "A:winner"}},
		{"values from nowhere", &wc.Row{HasClaimedAt: true, Count: 1, ClaimedAt: i64(5), FirstSeen: 1, LastSeen: 2, ExternalID: str("x")},
			RowSummary{Present: true, ClaimedAtCol: true, Count: 1, ClaimedAt: ValueOther, FirstSeen: ValueOther, LastSeen: ValueOther, Classification: ValueNull, ExternalID: ValueOther}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Summarize(tt.row, true, marks)); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestGroupAndCheck(t *testing.T) {
	a := []RaceOutcome{{Race: "A", Workers: 2, Winners: 1}}
	b := []RaceOutcome{{Race: "A", Workers: 2, Winners: 2}}
	groups := GroupOutcomes([][]RaceOutcome{a, b, a})
	want := []Group{{Outcome: a, Repetitions: []int{1, 3}}, {Outcome: b, Repetitions: []int{2}}}
	if d := cmp.Diff(want, groups); d != "" {
		t.Fatalf("groups (-want +got):\n%s", d)
	}
	if pass, _ := Check(ExpectedGroups(a, 3), GroupOutcomes([][]RaceOutcome{a, a, a})); !pass {
		t.Fatal("three matching repetitions failed the check")
	}
	pass, diff := Check(ExpectedGroups(a, 3), groups)
	if pass || !strings.Contains(diff, "Winners") {
		t.Fatalf("one bad repetition passed the check (diff %q)", diff)
	}
}

// Check compares the expected groups with the observed ones; diff is
// go-cmp's (-expected +observed) report. The run compares through
// scenario.Evaluate; this is the tests' view of the same question.
func Check(expected, observed []Group) (pass bool, diff string) {
	diff = cmp.Diff(expected, observed)
	return diff == "", diff
}
