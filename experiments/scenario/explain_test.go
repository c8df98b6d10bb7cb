package scenario_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want scenario.Path
	}{
		{".", nil},
		{"", nil},
		{"[0].outcome[1].row.claimed_at", scenario.Path{{Index: 0}, {Key: "outcome"}, {Index: 1}, {Key: "row"}, {Key: "claimed_at"}}},
		{"[ack].outcome", scenario.Path{{Key: "ack"}, {Key: "outcome"}}},
		{"timing.histogram.duplicate-2", scenario.Path{{Key: "timing"}, {Key: "histogram"}, {Key: "duplicate-2"}}},
		{".killed", scenario.Path{{Key: "killed"}}},
		{"[2]", scenario.Path{{Index: 2}}},
		{"a[unclosed", scenario.Path{{Key: "a"}, {Key: "[unclosed"}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, scenario.ParsePath(tt.in)); diff != "" {
			t.Errorf("ParsePath(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestLookup(t *testing.T) {
	doc := json.RawMessage(`[{"outcome":[{"race":"A"},{"race":"B","winners":0}]}]`)
	tests := []struct {
		path string
		want string
	}{
		{"[0].outcome[1].race", "B"},
		{"[0].outcome[1].winners", "0"},
		{"[0].outcome[2].race", ""},
		{"[0].nope", ""},
		{"[0][1]", ""},
	}
	for _, tt := range tests {
		if got := scenario.LookupText(doc, scenario.ParsePath(tt.path)); got != tt.want {
			t.Errorf("LookupText(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if _, ok := scenario.Lookup(json.RawMessage(`not json`), nil); ok {
		t.Error("Lookup found a value in a document that is not JSON")
	}
}

func TestNumbered(t *testing.T) {
	tests := []struct {
		ns   []int
		want string
	}{
		{[]int{2}, "trial 2"},
		{[]int{1, 2}, "trials 1, 2"},
		{[]int{5, 1, 2, 3, 4}, "trials 1–5"},
		{[]int{1, 2, 3, 7, 9, 10}, "trials 1–3, 7, 9, 10"},
	}
	for _, tt := range tests {
		if got := scenario.Numbered("trial", "trials", tt.ns); got != tt.want {
			t.Errorf("Numbered(%v) = %q, want %q", tt.ns, got, tt.want)
		}
	}
}

func TestMergeNumbered(t *testing.T) {
	dup := scenario.Explained{Words: "duplicates", Expected: "0", Observed: "1", Rank: scenario.RankDuplicates}
	steps := scenario.Explained{Words: "steps", Expected: "10", Observed: "50", Rank: scenario.RankOutcome}
	got := scenario.MergeNumbered("trial", "trials", []scenario.Miss{{N: 1, Explained: steps}, {N: 1, Explained: dup}, {N: 2, Explained: dup}, {N: 3, Explained: dup}})
	want := []scenario.Explained{
		{Words: "trial 1 steps", Expected: "10", Observed: "50", Rank: scenario.RankOutcome},
		{Words: "trials 1–3 duplicates", Expected: "0", Observed: "1", Rank: scenario.RankDuplicates},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// explaining is fake with an Explain that names path "b" the winners and
// leaves "a" unnamed.
type explaining struct{ fake }

func (explaining) Explain(c results.ConditionResult) []scenario.Explained {
	return scenario.EachDifference(c, func(p scenario.Path) (string, scenario.Rank) {
		if p.Key(0) == "b" {
			return "race B winners", scenario.RankWinners
		}
		return "", scenario.Unranked
	})
}

func TestExplain(t *testing.T) {
	c := results.ConditionResult{Differences: []results.Difference{
		{Path: ".a", Expected: `"x"`, Observed: `"y"`},
		{Path: ".b", Expected: "0", Observed: "1"},
	}}
	tests := []struct {
		name string
		s    scenario.Scenario
		want []string
	}{
		{"an explainer: named and ranked, the unnamed last with its path", explaining{}, []string{`race B winners want 0 got 1`, `.a want "x" got "y"`}},
		{"an Explain that says nothing: the paths in order", fake{}, []string{`.a want "x" got "y"`, `.b want 0 got 1`}},
		{"no scenario: the paths in order", nil, []string{`.a want "x" got "y"`, `.b want 0 got 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range scenario.Explain(tt.s, c) {
				got = append(got, e.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// wordless is a scenario written with Define whose Explain says nothing;
// withWords says a difference in words.
type wordless struct{}

func (wordless) Name() string            { return "wordless" }
func (wordless) Summary() string         { return "" }
func (wordless) Caps() scenario.Caps     { return scenario.Caps{} }
func (wordless) Flags() []scenario.Flag  { return nil }
func (wordless) Validate(struct{}) error { return nil }
func (wordless) Plan(context.Context, scenario.PlanRequest) (scenario.Plan, error) {
	return nil, nil
}
func (wordless) Check(_ string, e, o json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(e, o)
}
func (wordless) Explain(results.ConditionResult) []scenario.Explained { return nil }
func (wordless) Compare(struct{}, results.ScenarioResult, struct{}) scenario.Compared {
	return scenario.Compared{}
}
func (wordless) Expect(struct{}) ([]scenario.Expected, error) { return nil, nil }
func (wordless) Fold(struct{}, results.Records) (scenario.Folded, []results.Finding) {
	return scenario.Folded{}, nil
}
func (wordless) Report(struct{}, results.ScenarioResult, struct{}) (scenario.Section, error) {
	return scenario.Section{}, nil
}

type withWords struct{ wordless }

func (withWords) Explain(c results.ConditionResult) []scenario.Explained {
	return []scenario.Explained{{Words: "delivery 2 follow_up_jobs", Expected: "1", Observed: "2", Rank: scenario.RankJobs}}
}

// TestDefineForwardsExplain: Define forwards a typed scenario's Explain,
// and one that says nothing keeps the paths.
func TestDefineForwardsExplain(t *testing.T) {
	c := results.ConditionResult{Differences: []results.Difference{{Path: "[1].follow_up_jobs", Expected: "1", Observed: "2"}}}
	for _, tt := range []struct {
		s    scenario.Scenario
		want string
	}{
		{scenario.Define[struct{}, struct{}](withWords{}), "delivery 2 follow_up_jobs want 1 got 2"},
		{scenario.Define[struct{}, struct{}](wordless{}), "[1].follow_up_jobs want 1 got 2"},
	} {
		got := scenario.Explain(tt.s, c)
		if len(got) != 1 || got[0].String() != tt.want {
			t.Errorf("%T: %v, want %q", tt.s, got, tt.want)
		}
	}
}

// TestPhraseLines: text breaks between phrases (after "; " and ": "),
// never inside "one job want 1 got 0"; a phrase longer than a line breaks
// between words, and a word longer than a line stands alone.
func TestPhraseLines(t *testing.T) {
	for _, tt := range []struct {
		text         string
		first, width int
		want         []string
	}{
		{"short", 10, 10, []string{"short"}},
		{"FAIL p/power:DELETE/FULL: trial 10, power cut after the ACK: one job want 1 got 0; processed want 1 got 0", 70, 68,
			[]string{"FAIL p/power:DELETE/FULL: trial 10, power cut after the ACK:", "one job want 1 got 0; processed want 1 got 0"}},
		{"a: bb cc dd ee; f", 8, 8, []string{"a:", "bb cc dd", "ee; f"}},
		{"abcdefghijkl x", 5, 5, []string{"abcdefghijkl", "x"}},
	} {
		if got := scenario.PhraseLines(tt.text, tt.first, tt.width); !slices.Equal(got, tt.want) {
			t.Errorf("PhraseLines(%q, %d, %d) = %q, want %q", tt.text, tt.first, tt.width, got, tt.want)
		}
	}
}
