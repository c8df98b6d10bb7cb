package shard

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Part
		wantErr string
	}{
		{in: "1/4", want: Part{1, 4}},
		{in: "4/4", want: Part{4, 4}},
		{in: " 2/3 ", want: Part{2, 3}},
		{in: "1/1", want: Part{1, 1}},
		{in: "0/4", wantErr: "count from 1"},
		{in: "5/4", wantErr: "i is 1 to 4"},
		{in: "a/b", wantErr: "want i/n"},
		{in: "4", wantErr: "want i/n"},
		{in: "1/0", wantErr: "n is 0"},
		{in: fmt.Sprintf("1/%d", MaxCount+1), wantErr: "want 1 to"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--shard") {
					t.Fatalf("Parse(%q) = %v, %v; want an error naming --shard and %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = TrialID("single-transaction/crash-after-hits", i)
	}
	return out
}

// TestEveryTrialInOneShard: for every n, each trial runs in exactly one
// part, and every part runs some of a few hundred trials.
func TestEveryTrialInOneShard(t *testing.T) {
	all := ids(400)
	for _, n := range []int{1, 2, 3, 4, 16} {
		per := make([]int, n+1)
		for _, id := range all {
			runs := 0
			for i := 1; i <= n; i++ {
				if (&Part{i, n}).Runs(id) {
					runs++
					per[i]++
				}
			}
			if runs != 1 {
				t.Fatalf("n=%d: %s runs in %d parts, want 1", n, id, runs)
			}
		}
		for i := 1; i <= n; i++ {
			if per[i] == 0 {
				t.Errorf("n=%d: shard %d runs none of %d trials: %v", n, i, len(all), per[1:])
			}
		}
	}
	var whole *Part
	if !whole.Runs(all[0]) {
		t.Error("a nil part (the whole plan) does not run a trial")
	}
}

// TestAddingTrialsMovesNoOther: a trial's shard depends on its id alone,
// so a plan grown by more trials keeps every earlier trial where it was.
func TestAddingTrialsMovesNoOther(t *testing.T) {
	before := map[string]int{}
	for _, id := range ids(100) {
		before[id] = Of(id, 4)
	}
	for _, id := range ids(300) {
		if want, ok := before[id]; ok && Of(id, 4) != want {
			t.Errorf("%s moved from shard %d to %d when trials were added", id, want, Of(id, 4))
		}
	}
}

func TestProcessIDsApart(t *testing.T) {
	var whole *Part
	if got := whole.FirstProcessID(); got != 1 {
		t.Errorf("whole plan's first id %d, want 1", got)
	}
	for _, p := range []Part{{1, 4}, {2, 4}, {4, 4}} {
		first := p.FirstProcessID()
		if OfProcess(first) != p.Index || OfProcess(first+Stride-1) != p.Index {
			t.Errorf("shard %s: ids %d to %d are read as shards %d and %d", p, first, first+Stride-1, OfProcess(first), OfProcess(first+Stride-1))
		}
	}
}

func TestPlanHash(t *testing.T) {
	plan := []Trial{{"c", "c#0"}, {"c", "c#1"}}
	st := json.RawMessage(`{"seed":1,"trials":2}`)
	base, err := PlanHash(st, map[string][]string{"p": {"a", "b"}}, plan)
	if err != nil {
		t.Fatal(err)
	}
	same := []struct {
		name     string
		settings string
	}{
		{"another shard", `{"trials":2,"seed":1,"shard":{"index":2,"count":4}}`},
		{"other spacing", `{ "seed": 1, "trials": 2 }`},
	}
	for _, tt := range same {
		got, err := PlanHash(json.RawMessage(tt.settings), map[string][]string{"p": {"a", "b"}}, plan)
		if err != nil || got != base {
			t.Errorf("%s: hash %s, %v; want the plan's %s", tt.name, got, err, base)
		}
	}
	differ := []struct {
		name       string
		settings   string
		discovered map[string][]string
		plan       []Trial
	}{
		{"another seed", `{"seed":2,"trials":2}`, map[string][]string{"p": {"a", "b"}}, plan},
		{"other points", `{"seed":1,"trials":2}`, map[string][]string{"p": {"a", "c"}}, plan},
		{"a trial more", `{"seed":1,"trials":2}`, map[string][]string{"p": {"a", "b"}}, append(append([]Trial{}, plan...), Trial{"c", "c#2"})},
	}
	for _, tt := range differ {
		got, err := PlanHash(json.RawMessage(tt.settings), tt.discovered, tt.plan)
		if err != nil || got == base {
			t.Errorf("%s: hash %s, %v; want another than %s", tt.name, got, err, base)
		}
	}
}

func TestFromSettings(t *testing.T) {
	tests := []struct {
		settings string
		want     *Part
		wantErr  bool
	}{
		{`{"seed":1}`, nil, false},
		{`{"shard":{"index":2,"count":4}}`, &Part{2, 4}, false},
		{`{"shard":{"index":5,"count":4}}`, nil, true},
		{`[]`, nil, true},
	}
	for _, tt := range tests {
		got, err := FromSettings(json.RawMessage(tt.settings))
		if (err != nil) != tt.wantErr || !cmp.Equal(got, tt.want) {
			t.Errorf("FromSettings(%s) = %v, %v; want %v, error %v", tt.settings, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestWithoutShardOneSpelling: settings marshalled with and without HTML
// escaping (a pattern file's "a <= b" as json.Marshal writes it, and as
// results.json does) are one canonical form, so a run's plan hash is the
// one verify derives from the folder; an escaped backslash before "u003c"
// stays text.
func TestWithoutShardOneSpelling(t *testing.T) {
	tests := []struct{ a, b string }{
		{`{"q": "a \u003c= b \u0026\u0026 c \u003e d", "shard": {"index": 1, "count": 2}}`, `{"q":"a <= b && c > d"}`},
		{`{"q": "\\u003c"}`, `{"q": "\\u003c"}`},
	}
	for _, tt := range tests {
		a, err := WithoutShard(json.RawMessage(tt.a))
		if err != nil {
			t.Fatal(err)
		}
		b, err := WithoutShard(json.RawMessage(tt.b))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(b), string(a)); diff != "" {
			t.Errorf("WithoutShard(%s) (-want +got):\n%s", tt.a, diff)
		}
	}
	if a, _ := WithoutShard(json.RawMessage(`{"q": "\\u003c"}`)); string(a) != `{"q":"\\u003c"}` {
		t.Errorf("an escaped backslash before u003c became %s", a)
	}
}
